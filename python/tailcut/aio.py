"""asyncio door (docs/PYTHON.md, "asyncio"): `tailcut.AsyncClient`, whose
futures are awaited without blocking the event loop.

    async with tailcut.AsyncClient() as c:
        fut = c.submit(score, 3)                 # returns at once
        print(await fut)
        print(await c.map(score, range(100)))    # the results in order
        async for fut in c.as_completed(futs):
            ...

It drives a tailcut.Executor: its thread talks to the scheduler and hands
the results of each of its turns to the loop in one call_soon_threadsafe,
so the loop only ever does the pickling of a submit and the setting of
results. Starting (a local cluster, the connection) and
closing run in the loop's default thread pool.
"""

import asyncio
import functools

from ._futures import check_timeout
from .executor import Executor


class AsyncClient:
    """Arguments as tailcut.Executor (max_workers, scheduler, cluster,
    idempotent, and the Client's options)."""

    def __init__(self, *args, **options):
        self._make = functools.partial(Executor, *args, **options)
        self.executor = None

    async def start(self):
        if self.executor is None:
            self.executor = await asyncio.get_running_loop().run_in_executor(None, self._make)
        return self

    def __await__(self):
        return self.start().__await__()

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc):
        await self.close()

    async def close(self):
        """Waits (off the loop) for the sent tasks, then closes."""
        if self.executor is not None:
            ex, self.executor = self.executor, None
            await asyncio.get_running_loop().run_in_executor(None, ex.shutdown)

    def _open(self):
        if self.executor is None:
            raise RuntimeError("AsyncClient not started: `async with tailcut.AsyncClient() as c` or `await c.start()`")
        return self.executor

    def submit(self, fn, /, *args, **kwargs):
        """fn(*args, **kwargs) as a task: an asyncio Future of this loop,
        at once (the function and arguments are pickled here, so what does
        not pickle is refused here)."""
        ex = self._open()
        return ex.submit_task(fn, args, kwargs, outer=asyncio.get_running_loop().create_future())

    async def map(self, fn, *iterables, timeout=None, progress=None):
        """The results of fn over the iterables zipped, in order (one job)."""
        futures = []
        for i, items in enumerate(zip(*iterables)):
            futures.append(self.submit(fn, *items))
            if i % 256 == 255:
                await asyncio.sleep(0)  # a long map does not hold the loop
        return await self.gather(futures, timeout=timeout, progress=progress)

    async def gather(self, futures, timeout=None, return_exceptions=False, progress=None):
        """The futures' results in order; the first exception is raised
        (or returned in its place with return_exceptions); TimeoutError
        after `timeout` seconds (the tasks go on)."""
        from . import _progress

        timeout = check_timeout(timeout)
        futures = list(futures)
        bar = _progress.for_futures(futures, progress, "tasks")
        try:
            together = asyncio.gather(*futures, return_exceptions=return_exceptions)
            return await (together if timeout is None else asyncio.wait_for(together, timeout))
        finally:
            if bar is not None:
                bar.close()

    async def as_completed(self, futures, timeout=None):
        """Yields the futures as they finish (an async iterator)."""
        timeout = check_timeout(timeout)
        by_wrapped = {asyncio.ensure_future(f): f for f in set(futures)}
        pending = set(by_wrapped)
        loop = asyncio.get_running_loop()
        end = None if timeout is None else loop.time() + timeout
        while pending:
            left = None if end is None else max(0.0, end - loop.time())
            done, pending = await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            if not done:
                raise TimeoutError(f"{len(pending)} (of {len(by_wrapped)}) futures unfinished")
            for w in done:
                yield by_wrapped[w]
