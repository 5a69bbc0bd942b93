// tailcut-hello: submits a fan-out of noop tasks and waits for it, using
// only an installed tailcut (find_package(tailcut) or pkg-config tailcut).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tailcut/client/client.h"
#include "tailcut/common/version.h"

int main(int argc, char** argv) {
  tailcut::ClientOptions options;
  unsigned tasks = 10;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf("usage: tailcut-hello [--scheduler EP] [--tasks N]\n%s\n",
                  tailcut::VersionLine("tailcut-hello").c_str());
      return 0;
    } else if (a == "--scheduler" && i + 1 < argc) {
      options.endpoint = argv[++i];
    } else if (a == "--tasks" && i + 1 < argc) {
      tasks = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else {
      std::fprintf(stderr, "tailcut-hello: unknown argument %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  tailcut::Client client(options);
  auto id = client.Submit(tailcut::FanoutJob("noop", "", tasks));
  if (!id.ok()) {
    std::fprintf(stderr, "tailcut-hello: submit: %s\n", id.status().message().c_str());
    return 1;
  }
  tailcut::WaitOptions w;
  w.timeout_s = 60;
  auto st = client.Wait(*id, w);
  if (!st.ok()) {
    std::fprintf(stderr, "tailcut-hello: wait: %s\n", st.status().message().c_str());
    return 1;
  }
  std::printf("job %llu: %s, %u/%u tasks committed\n", static_cast<unsigned long long>(*id),
              tailcut::wire::JobState_Name(st->state()).c_str(), st->committed(), st->tasks());
  return st->state() == tailcut::wire::JOB_SUCCEEDED ? 0 : 1;
}
