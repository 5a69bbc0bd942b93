"""Client-side checks: job descriptions, arguments and a scheduler that does
not answer. No daemons."""

import socket
import threading

import pytest
import zmq

import tailcut
from tailcut._proto import pb
from tailcut.jobs import Job, Task


def spec(job):
    return job.to_wire()


def test_fanout_is_one_template():
    s = spec(tailcut.fanout("sleep", "ms=5", tasks=1000))
    assert s.template_count == 1000 and len(s.tasks) == 0
    assert getattr(s, "template").kernel == "sleep" and getattr(s, "template").args == b"ms=5"
    assert s.return_outputs and not s.stream_results and s.rule.kind == 0


def test_k_of_n_and_quorum_rules():
    s = spec(tailcut.k_of_n("matmul", "n=8", n=6, k=4))
    assert (s.rule.kind, s.rule.k, s.template_count) == (1, 4, 6)
    q = spec(tailcut.quorum("sleep", n=10, k=8, min_count=5, deadline_s=2.5))
    assert (q.rule.kind, q.rule.k, q.rule.min_count, q.rule.deadline_s) == (2, 8, 5, 2.5)


def test_output_dir_goes_on_the_wire():
    s = spec(tailcut.fanout("shell", "echo x > $TAILCUT_OUTPUT_DIR/x", tasks=3, output_dir="/data/run7"))
    assert s.output_dir == "/data/run7" and s.template_count == 3
    assert spec(tailcut.fanout("noop", tasks=1)).output_dir == ""
    with pytest.raises(tailcut.InvalidArgument, match="output_dir must be str"):
        spec(Job(template=Task("noop"), count=1, output_dir=7))


def test_priority_goes_on_the_wire_within_bounds():
    assert spec(tailcut.fanout("noop", tasks=2, priority=7)).priority == 7
    assert spec(tailcut.fanout("noop", tasks=2)).priority == 0
    assert spec(tailcut.fanout("noop", tasks=1, priority=-1000)).priority == -1000
    for bad in (1001, -1001, 1.5, True, "3"):
        with pytest.raises(tailcut.InvalidArgument, match="priority"):
            spec(tailcut.fanout("noop", tasks=1, priority=bad))


def test_explicit_tasks_keep_their_order_and_fields():
    job = Job(tasks=[Task("shell", "echo a"), Task("matmul", b"n=4", cpu_slots=2, gpus=1, labels={"zone": "a"})],
              template=Task("noop"), count=3, rule="k_of_n", k=2)
    s = spec(job)
    assert [t.kernel for t in s.tasks] == ["shell", "matmul"] and s.template_count == 3
    assert s.tasks[1].demand.cpu_slots == 2 and s.tasks[1].demand.gpus == 1
    assert dict(s.tasks[1].demand.labels) == {"zone": "a"}
    assert job.total_tasks == 5


def test_memory_requests_and_gpus_go_on_the_wire():
    s = spec(Job(tasks=[Task("shell", "true", memory_mb=2048, gpus=2), Task("noop")]))
    assert s.tasks[0].demand.memory_mb == 2048 and s.tasks[0].demand.gpus == 2
    assert s.tasks[1].demand.memory_mb == 0
    assert spec(Job(tasks=[Task("noop", memory_mb=2**40)])).tasks[0].demand.memory_mb == 2**40


@pytest.mark.parametrize("job, words", [
    (lambda: tailcut.fanout("sleep", tasks=0), "no tasks"),
    (lambda: tailcut.fanout("", tasks=1), "kernel"),
    (lambda: tailcut.fanout("sleep", 42, tasks=1), "args"),
    (lambda: tailcut.fanout("sleep", tasks=-1), "count"),
    (lambda: tailcut.fanout("sleep", tasks=2.5), "count"),
    (lambda: tailcut.k_of_n("sleep", n=3, k=4), "1 <= k <= tasks"),
    (lambda: tailcut.k_of_n("sleep", n=3, k=0), "1 <= k <= tasks"),
    (lambda: tailcut.quorum("sleep", n=3, k=2, min_count=3), "min_count <= k"),
    (lambda: tailcut.quorum("sleep", n=3, k=2, deadline_s=-1), "deadline_s"),
    (lambda: Job(tasks=[Task("noop")], rule="most"), "rule must be one of"),
    (lambda: Job(tasks=[Task("noop")], k=2), "not 'all'"),
    (lambda: Job(tasks=[Task("noop", cpu_slots=0)]), "tasks[0].cpu_slots"),
    (lambda: Job(tasks=[Task("noop", memory_mb=2**40 + 1)]), "tasks[0].memory_mb"),
    (lambda: Job(tasks=[Task("noop", memory_mb=float("nan"))]), "tasks[0].memory_mb"),
    (lambda: Job(tasks=[Task("noop", memory_mb=-1)]), "tasks[0].memory_mb"),
    (lambda: Job(tasks=[Task("noop", timeout_s=float("nan"))]), "tasks[0].timeout_s"),
    (lambda: Job(tasks=[Task("noop", labels={"a": 1})]), "labels"),
    (lambda: Job(tasks=["noop"]), "list of tailcut.Task"),
    (lambda: Job(count=3), "no template"),
])
def test_bad_jobs_are_refused_before_sending(job, words):
    with pytest.raises(tailcut.InvalidArgument) as e:
        job().to_wire()
    assert words in str(e.value)
    assert e.value.code is None  # found by the client, not the scheduler


@pytest.mark.parametrize("kwargs, words", [
    ({"scheduler": "http://x:1"}, "unknown transport"),
    ({"scheduler": "tcp://host"}, "missing host or port"),
    ({"scheduler": "tcp://h:99999"}, "port above 65535"),
    ({"scheduler": "tcp://a:1,,tcp://b:2"}, "an empty entry"),
    ({"scheduler": "tcp://a:1,"}, "an empty entry"),
    ({"scheduler": "tcp://a:1,b:2"}, "unknown transport"),
    ({"key_file": "a.key", "scheduler_key": ""}, "set both"),
    ({"key_file": "/nonexistent/a.key", "scheduler_key": "/nonexistent/s.pub"}, "cannot read key file"),
    ({"timeout": 0}, "timeout"),
])
def test_bad_client_arguments(kwargs, words):
    with pytest.raises(tailcut.InvalidArgument) as e:
        tailcut.Client(**{"key_file": "", "scheduler_key": "", **kwargs})
    assert words in str(e.value)


def test_public_key_file_is_not_a_key_pair(tmp_path):
    pub = tmp_path / "me.pub"
    pub.write_text('[[key]]\nname = "me"\nrole = "client"\npublic = "%s"\n' % ("0" * 40))
    with pytest.raises(tailcut.InvalidArgument) as e:
        tailcut.Client(key_file=str(pub), scheduler_key="0" * 40)
    assert "secret" in str(e.value)


def test_bad_job_ids_and_submit_types():
    with tailcut.Client("tcp://127.0.0.1:9", key_file="", scheduler_key="", timeout=0.2) as c:
        for bad in (0, -1, "7", 1.0, True):
            with pytest.raises(tailcut.InvalidArgument):
                c.status(bad)
        with pytest.raises(tailcut.InvalidArgument):
            c.submit({"kernel": "noop"})
        for kwargs in ({"timeout": -1}, {"poll_interval": 0}, {"reconnect_timeout": "soon"}):
            with pytest.raises(tailcut.InvalidArgument):
                c.wait(1, **kwargs)


def test_no_scheduler_is_unavailable():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tailcut.Client(f"tcp://127.0.0.1:{port}", key_file="", scheduler_key="", timeout=0.3) as c:
        with pytest.raises(tailcut.Unavailable) as e:
            c.executors()
    assert "no answer from the scheduler" in str(e.value)


def test_closed_client_refuses_calls():
    c = tailcut.Client(key_file="", scheduler_key="")
    c.close()
    with pytest.raises(tailcut.InvalidArgument):
        c.executors()


def test_after_and_inputs_reach_the_spec_and_are_checked():
    job = tailcut.Job(template=tailcut.Task("noop", inputs=[(3, 0), (4, None)]), count=2, after=[3, 4])
    spec = job.to_wire()
    assert list(spec.after) == [3, 4]
    refs = spec.template.inputs
    assert (refs[0].job_id, refs[0].task_index, refs[0].all_tasks) == (3, 0, False)
    assert (refs[1].job_id, refs[1].all_tasks) == (4, True)
    with pytest.raises(tailcut.InvalidArgument, match="after"):
        tailcut.Job(template=tailcut.Task("noop"), count=1, after=[0]).to_wire()
    with pytest.raises(tailcut.InvalidArgument, match="inputs"):
        tailcut.Job(template=tailcut.Task("noop", inputs=[3]), count=1).to_wire()


def _fake_replicas(n):
    """n ROUTER sockets on loopback standing in for a scheduler's replicas."""
    ctx = zmq.Context.instance()
    socks = []
    for _ in range(n):
        r = ctx.socket(zmq.ROUTER)
        r.linger = 0
        r.bind("tcp://127.0.0.1:*")
        socks.append(r)
    return socks, [r.getsockopt_string(zmq.LAST_ENDPOINT) for r in socks]


def _answer(sock, reply_for):
    """Answers one request on `sock` (within 5 s) with reply_for(request)."""
    assert sock.poll(5000), "no request reached this replica"
    route, frame = sock.recv_multipart()
    req = pb.ClientRequest()
    req.ParseFromString(frame)
    reply = reply_for(req)
    reply.version, reply.request_id = pb.PROTOCOL_VERSION_CURRENT, req.request_id
    sock.send_multipart([route, reply.SerializeToString()])
    return req


def test_replicas_a_client_follows_not_leader_and_moves_on_from_a_silent_one():
    """docs/RELIABILITY.md, "Replicas": a follower's NOT_LEADER sends the
    request to the leader it names; a replica silent for 2 s, to the next."""
    socks, eps = _fake_replicas(3)

    def not_leader(req):
        r = pb.ClientReply()
        r.error.code, r.error.message, r.error.leader_endpoint = pb.Error.NOT_LEADER, "replica 1 does not lead", eps[2]
        return r

    def status(req):
        r = pb.ClientReply()
        r.status.job_id, r.status.state = req.status.job_id, pb.JOB_RUNNING
        return r

    got = {}
    with tailcut.Client(" , ".join(eps), key_file="", scheduler_key="", timeout=8) as c:
        assert c.endpoints.all == eps and c.endpoint == eps[0]
        t = threading.Thread(target=lambda: got.update(first=c.status(7)))
        t.start()
        _answer(socks[0], not_leader)
        assert _answer(socks[2], status).status.job_id == 7
        t.join(5)
        assert got["first"].state == "running" and c.endpoint == eps[2]
        # The leader goes silent: two resends later the next replica (the
        # first, after the last) gets the request and answers it.
        t = threading.Thread(target=lambda: got.update(second=c.status(8)))
        t.start()
        assert socks[2].poll(5000)
        socks[2].recv_multipart()  # heard, never answered
        assert _answer(socks[0], status).status.job_id == 8
        t.join(5)
        assert got["second"].job_id == 8 and c.endpoint == eps[0]
        # A leader this client does not list: the error says where it is.
        t = threading.Thread(target=lambda: got.update(third=pytest.raises(tailcut.Unavailable, c.status, 9)))
        t.start()

        def elsewhere(req):
            r = not_leader(req)
            r.error.leader_endpoint = "tcp://10.0.0.9:7701"
            r.error.message = "the leader is replica 4 at tcp://10.0.0.9:7701"
            return r

        _answer(socks[0], elsewhere)
        t.join(5)
        assert "tcp://10.0.0.9:7701" in str(got["third"].value)
    for s in socks:
        s.close()
