"""The Python client against real daemons (tailcut.LocalCluster), without
and with keys (the `cluster` fixture, conftest.py). Behaviour only: no
timing is asserted."""

import os
import subprocess
import threading

import pytest

import tailcut
from tailcut.client import login_name
from tailcut.jobs import Job, Task

LONG = "ms=600000"  # a sleep that outlives every test: ended by cancel


def test_executors_are_listed(client):
    execs = client.executors()
    assert len(execs) >= 2
    assert all(e.cpu_slots == 2 and e.health == "healthy" and not e.quarantined for e in execs)


def test_submit_wait_results(client):
    job = client.submit(tailcut.fanout("matmul", "n=8", tasks=6))
    final = client.wait(job)
    assert final.succeeded and final.state == "succeeded"
    assert (final.job_id, final.tasks, final.committed) == (job, 6, 6)
    results = client.results(job)
    assert [r.task_index for r in results] == list(range(6))
    assert all(r.text.startswith("checksum=") for r in results)
    assert len({r.output for r in results}) == 1  # same arguments, same product


def test_trace_is_the_committed_attempts(client):
    job = client.submit(tailcut.fanout("sleep", "ms=5", tasks=6))
    assert client.wait(job).succeeded
    t = client.trace(job)
    assert (t.job_id, t.state, t.committed, t.complete) == (job, "succeeded", 6, True)
    assert sorted(a.task for a in t.attempts) == list(range(6))
    assert all(a.end_s >= a.start_s and a.task_class == "sleep" for a in t.attempts)
    executors = {e.executor_id for e in client.executors()}
    assert {a.executor_id for a in t.attempts} <= executors
    lines = t.csv().splitlines()
    assert lines[0].startswith("job,task,executor,start,end") and len(lines) == 7


def test_explicit_task_list(client):
    job = client.submit(Job(tasks=[Task("matmul", "n=4 seed=1"), Task("matmul", "n=4 seed=2"), Task("noop")],
                            name="mixed"))
    assert client.wait(job).succeeded
    r = client.results(job)
    assert r[0].output != r[1].output and r[0].text.startswith("checksum=") and r[2].output == b""
    assert client.status(job).name == "mixed"


def test_as_completed_streams_every_task_once(client):
    job = client.submit(tailcut.fanout("sleep", "ms=20", tasks=24, stream_results=True))
    indices = [r.task_index for r in client.as_completed(job)]
    assert sorted(indices) == list(range(24))  # each once, in whatever order they committed


def test_as_completed_without_streaming_fills_in(client):
    # The job ends before as_completed starts watching: every result comes
    # from the scheduler's kept outputs.
    job = client.submit(tailcut.fanout("matmul", "n=4", tasks=5))
    assert client.wait(job).succeeded
    assert sorted(r.task_index for r in client.as_completed(job)) == list(range(5))


def test_cancel(client):
    job = client.submit(tailcut.fanout("sleep", LONG, tasks=4))
    st = client.cancel(job)
    assert st.state == "cancelled" and "cancelled by client" in st.reason
    assert client.wait(job).state == "cancelled"
    with pytest.raises(tailcut.JobFailed) as e:
        list(client.as_completed(job))
    assert e.value.status.state == "cancelled"


def test_wait_timeout_leaves_the_job_running(client):
    job = client.submit(tailcut.fanout("sleep", LONG, tasks=1))
    with pytest.raises(tailcut.Timeout):
        client.wait(job, timeout=0.3)
    assert client.status(job).state == "running"
    client.cancel(job)


def test_k_of_n(client):
    job = client.submit(tailcut.k_of_n("sleep", "ms=10", n=6, k=3))
    final = client.wait(job)
    assert final.succeeded and final.committed == 3 and final.tasks == 6
    assert len(client.results(job)) == 3


def test_quorum(client):
    job = client.submit(tailcut.quorum("sleep", "ms=10", n=4, k=2, min_count=1, deadline_s=600))
    final = client.wait(job)
    assert final.succeeded and final.committed == 2


def test_resent_submit_is_the_same_job(client):
    job = tailcut.fanout("noop", tasks=2, request_key=tailcut.new_request_key())
    first = client.submit(job)
    assert client.submit(job) == first
    assert client.wait(first).succeeded


def test_owner_is_the_key_or_the_login_name(cluster, client):
    job = client.submit(tailcut.fanout("noop", tasks=1))
    owner = client.wait(job).owner
    if cluster.with_keys:
        assert owner == tailcut.keys.load_key_pair(os.path.join(cluster.keys_dir, "client.key")).public
    else:
        assert owner == "user:" + login_name()


def test_unknown_job(client):
    for call in (client.status, client.cancel, client.results, client.trace, client.wait):
        with pytest.raises(tailcut.UnknownJob) as e:
            call(987654321)
        assert e.value.code == "UNKNOWN_JOB" and "987654321" in e.value.message


def test_another_owners_job(cluster, client, other):
    job = client.submit(tailcut.fanout("sleep", LONG, tasks=1))
    for call in (other.status, other.cancel, other.results, other.trace, other.wait):
        with pytest.raises(tailcut.NotYourJob) as e:
            call(job)
        assert e.value.code == "NOT_YOUR_JOB" and f"job {job} is not your job" in e.value.message
    assert client.status(job).state == "running"  # the refused cancel did nothing
    if cluster.with_keys:
        with cluster.client("admin") as admin:  # admin keys act on every job
            assert admin.cancel(job).state == "cancelled"
    else:
        client.cancel(job)


def test_unknown_kernel_names_the_offered_ones(client):
    with pytest.raises(tailcut.UnknownKernel) as e:
        client.submit(tailcut.fanout("no_such_kernel", tasks=1))
    assert e.value.code == "UNKNOWN_KERNEL"
    assert "no_such_kernel" in e.value.message and "sleep" in e.value.message


def test_mistyped_kernel_argument_is_refused_at_submit(client):
    # The executors declare what sleep takes (Register.kernel_args): a
    # mistyped name, a wrong type or an out-of-range value is refused at
    # submit, naming the kernel's arguments, instead of running with the
    # default (docs/KERNELS.md, "Declared arguments").
    for args, why in [("msx=10", "no argument 'msx'"), ("ms=ten", "'ms' must be a finite number"),
                      ("ms=-5", "'ms' must be in")]:
        with pytest.raises(tailcut.InvalidArgument) as e:
            client.submit(tailcut.fanout("sleep", args, tasks=2))
        assert e.value.code == "INVALID_ARGUMENT"
        assert why in e.value.message and "ms (number" in e.value.message and "sigma" in e.value.message
    # Per-task templates are checked by name; shell-like kernels are free-form.
    job = client.submit(tailcut.fanout("sleep", "ms={index} seed=3", tasks=2))
    assert client.wait(job, timeout=30).succeeded


def test_shell_needs_allow_shell(client):
    with pytest.raises(tailcut.UnknownKernel) as e:
        client.submit(tailcut.fanout("shell", "echo hi", tasks=1))
    assert "--allow-shell" in e.value.message


def test_infeasible_demand(client):
    job = Job(template=Task("sleep", "ms=1", cpu_slots=64), count=1)
    with pytest.raises(tailcut.Infeasible) as e:
        client.submit(job)
    assert e.value.code == "INFEASIBLE" and "64 cpu slot(s)" in e.value.message


def test_scheduler_checks_what_the_client_cannot(client):
    job = Job(template=Task("sleep", gpus=65), count=1)  # over the wire's 64
    with pytest.raises(tailcut.InvalidArgument) as e:
        client.submit(job)
    assert e.value.code == "INVALID_ARGUMENT"


def test_keys_are_required(cluster, tmp_path):
    if not cluster.with_keys:
        pytest.skip("the cluster has no keys")
    with tailcut.Client(cluster.client_endpoint, key_file="", scheduler_key="", timeout=5) as c:
        with pytest.raises(tailcut.Refused) as e:
            c.executors()
    assert "wants keys" in str(e.value)
    # A key the scheduler does not trust is refused at the handshake.
    subprocess.run([str(cluster.bin_dir / "tailcut"), "keygen", "stranger", "--dir", str(tmp_path)],
                   check=True, stdout=subprocess.DEVNULL)
    with tailcut.Client(cluster.client_endpoint, key_file=str(tmp_path / "stranger.key"),
                        scheduler_key=os.path.join(cluster.keys_dir, "scheduler.pub"), timeout=5) as c:
        with pytest.raises(tailcut.Refused) as e:
            c.executors()
    assert "refused this key" in str(e.value)


def test_wait_and_as_completed_survive_a_scheduler_crash(cluster):
    # Requests are resent each second and the status polled, so a client
    # waiting across a crash and restart (with the journal) gets the end.
    with tailcut.LocalCluster(executors=2, keys=cluster.with_keys, journal=True) as jc, jc.client() as c:
        job = c.submit(tailcut.fanout("sleep", "ms=1500", tasks=4))
        outcome = {}

        def wait():  # the client is used by this thread only from here on
            try:
                outcome["final"] = c.wait(job)
                outcome["results"] = sorted(r.task_index for r in c.as_completed(job))
            except Exception as e:
                outcome["error"] = e

        waiter = threading.Thread(target=wait)
        waiter.start()
        jc.restart_scheduler(kill=True)
        waiter.join()
        assert "error" not in outcome, outcome.get("error")
        assert outcome["final"].succeeded and outcome["final"].committed == 4
        assert outcome["results"] == [0, 1, 2, 3]


def test_shell_with_allow_shell(cluster, client):
    # Last: it adds an executor to the module's cluster.
    cluster.add_executor(allow_shell=True)
    job = client.submit(tailcut.fanout("shell", "echo hello from shell", tasks=2))
    assert client.wait(job).succeeded
    assert [r.text for r in client.results(job)] == ["hello from shell\n"] * 2
