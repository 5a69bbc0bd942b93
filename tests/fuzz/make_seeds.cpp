// Writes the protobuf seeds of the wire targets into tests/fuzz/corpus
// (committed; rerun after a .proto change): a few valid messages of each
// kind, naming the attempts and jobs of core_fixture.h.
//   build-fuzz/fuzz/fuzz_make_seeds tests/fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tailcut/coding/matrix.h"
#include "tailcut/coding/task_args.h"
#include "tailcut/wire/wire.h"

namespace {

std::filesystem::path g_root;

void Write(const std::string& target, const std::string& name, const google::protobuf::MessageLite& m) {
  std::filesystem::create_directories(g_root / target);
  std::ofstream(g_root / target / (name + ".pb"), std::ios::binary) << m.SerializeAsString();
}

void ExecutorMessages() {
  using tailcut::wire::AttemptResult;
  tailcut::wire::ExecutorMessage m;
  m.set_version(tailcut::kProtocolVersion);
  auto* r = m.mutable_register_();
  r->set_name("host:1");
  r->set_host("host");
  r->set_cpu_slots(4);
  r->set_max_queued(8);
  r->add_kernels("noop");
  r->add_kernels("sleep");
  (*r->mutable_labels())["zone"] = "a";
  r->add_gpus()->set_name("gpu0");
  Write("executor_message", "register", m);
  for (uint64_t a = 1; a <= 3; ++a) {
    auto* h = r->add_running();
    h->set_attempt_id(a);
    h->set_job_id(1);
    h->set_task_index(static_cast<uint32_t>(a - 1));
    h->set_started(a != 2);
  }
  auto* u = r->add_undelivered();
  u->set_attempt_id(4);
  u->set_job_id(1);
  u->set_task_index(3);
  u->set_output("out");
  u->set_run_s(0.5);
  Write("executor_message", "register_takeback", m);

  m.Clear();
  m.set_version(tailcut::kProtocolVersion);
  auto* rep = m.mutable_report();
  rep->add_started()->set_attempt_id(1);
  rep->add_started()->set_attempt_id(2);
  auto* p = rep->add_progress();
  p->set_attempt_id(2);
  p->set_fraction(0.5f);
  AttemptResult::Outcome outcomes[] = {AttemptResult::OK, AttemptResult::FAILED, AttemptResult::CANCELLED,
                                       AttemptResult::REFUSED};
  for (int i = 0; i < 4; ++i) {
    auto* res = rep->add_results();
    res->set_attempt_id(static_cast<uint64_t>(i + 1));
    res->set_outcome(outcomes[i]);
    res->set_run_s(0.25 * (i + 1));
    res->set_output("x");
    res->set_error(i == 1 ? "boom" : "");
  }
  rep->mutable_signals()->set_load(0.5);
  Write("executor_message", "report", m);
  m.Clear();
  m.set_version(tailcut::kProtocolVersion);
  m.mutable_goodbye()->set_reason("bye");
  Write("executor_message", "goodbye", m);
}

void ClientRequests() {
  tailcut::wire::ClientRequest q;
  q.set_version(tailcut::kProtocolVersion);
  q.set_request_id(7);
  auto* j = q.mutable_submit()->mutable_job();
  j->set_name("fanout");
  j->mutable_template_()->set_kernel("sleep");
  j->mutable_template_()->set_args("ms=5");
  j->set_template_count(16);
  j->set_return_outputs(true);
  Write("client_request", "submit_template", q);
  j->Clear();
  j->set_name("explicit");
  for (int i = 0; i < 3; ++i) {
    auto* t = j->add_tasks();
    t->set_kernel(i ? "noop" : "spin");
    t->set_args("ms=1");
    t->mutable_demand()->set_cpu_slots(static_cast<uint32_t>(i + 1));
    (*t->mutable_demand()->mutable_labels())["zone"] = "a";
    t->mutable_features()->set_task_class("c");
    t->mutable_features()->set_input_size(10);
    t->set_timeout_s(5);
  }
  j->mutable_rule()->set_kind(tailcut::wire::CompletionRule::QUORUM);
  j->mutable_rule()->set_k(2);
  j->mutable_rule()->set_min_count(1);
  j->mutable_rule()->set_deadline_s(3);
  j->set_max_attempts(2);
  j->set_stream_results(true);
  j->set_request_key("k1");
  j->set_timeout_s(60);
  Write("client_request", "submit_quorum", q);
  j->mutable_rule()->set_kind(tailcut::wire::CompletionRule::K_OF_N);
  j->set_wait_for_resources(true);
  Write("client_request", "submit_k_of_n", q);
  q.Clear();
  q.set_version(tailcut::kProtocolVersion);
  q.mutable_status()->set_job_id(1);
  Write("client_request", "status", q);
  q.mutable_cancel()->set_job_id(1);
  Write("client_request", "cancel", q);
  q.mutable_watch()->set_job_id(1);
  Write("client_request", "watch", q);
  q.mutable_results()->set_job_id(1);
  Write("client_request", "results", q);
  q.mutable_list_executors();
  Write("client_request", "list_executors", q);
}

void SchedulerMessages() {
  tailcut::wire::SchedulerToExecutor m;
  m.set_version(tailcut::kProtocolVersion);
  auto* ack = m.mutable_registered();
  ack->set_executor_id(1);
  ack->set_heartbeat_interval_ms(1000);
  ack->set_lost_after_ms(10000);
  Write("scheduler_to_executor", "registered", m);
  auto* w = m.mutable_work();
  auto add = [&](const std::string& kernel, const std::string& args) {
    auto* a = w->add_assign();
    a->set_attempt_id(static_cast<uint64_t>(w->assign_size()));
    a->set_job_id(1);
    a->set_kernel(kernel);
    a->set_args(args);
  };
  add("noop", "");
  add("sleep", "ms=20 sigma=0.3 seed=4");
  add("spin", "ms=1");
  add("matmul", "n=8 seed=2");
  w->add_cancel(2);
  Write("scheduler_to_executor", "work_text_kernels", m);
  w->Clear();
  auto a = tailcut::coding::Matrix::FromData(2, 2, {1, 2, 3, 4});
  add("coded_matmul", tailcut::coded::MatmulArgs(0, *a, {1, 1}));
  Write("scheduler_to_executor", "work_coded_matmul", m);
  w->Clear();
  tailcut::coded::LsqPartition part{*a, {1, 0}};
  add("gradient_worker", tailcut::coded::GradientArgs(0, {1.0}, {&part}, {0.5, -0.5}));
  add("gradient_worker", tailcut::coded::GradientArgs(1, {1.0}, {&part}, {0.5, -0.5}, tailcut::coded::Loss::kLogistic));
  Write("scheduler_to_executor", "work_gradient", m);
}

void ClientReplies() {
  tailcut::wire::ClientReply r;
  r.set_version(tailcut::kProtocolVersion);
  r.set_request_id(7);
  r.mutable_error()->set_code(tailcut::wire::Error::UNKNOWN_JOB);
  r.mutable_error()->set_message("unknown job 9");
  Write("client_reply", "error", r);
  auto* s = r.mutable_status();
  s->set_job_id(1);
  s->set_name("j");
  s->set_state(tailcut::wire::JOB_SUCCEEDED);
  s->set_tasks(4);
  s->set_committed(4);
  Write("client_reply", "status", r);
  auto* rs = r.mutable_results();
  rs->set_job_id(1);
  auto* t = rs->add_results();
  t->set_task_index(0);
  t->set_output("checksum=1");
  Write("client_reply", "results", r);
  auto* e = r.mutable_executors()->add_executors();
  e->set_executor_id(1);
  e->set_name("e1");
  e->mutable_health()->set_state(tailcut::wire::ExecutorHealth::FAIL_SLOW);
  Write("client_reply", "executors", r);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds CORPUS_DIR\n");
    return 2;
  }
  g_root = argv[1];
  ExecutorMessages();
  ClientRequests();
  SchedulerMessages();
  ClientReplies();
  return 0;
}
