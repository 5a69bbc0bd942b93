#include "tailcut/client/pipeline.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "tailcut/common/config.h"

namespace tailcut {
namespace {

// FNV-1a, 64 bits: the same text gives the same request keys on every machine.
std::string Digest(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

bool NameOk(const std::string& n) {
  if (n.empty() || n.size() > 128) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

template <typename F>
void ForEachTask(wire::JobSpec& j, F f) {
  if (j.template_count() > 0) f(*j.mutable_template_());
  for (wire::TaskSpec& t : *j.mutable_tasks()) f(t);
}

}  // namespace

bool IsPipelineFile(const std::string& path) {
  auto cfg = Config::LoadFile(path);
  return cfg.ok() && cfg->ArraySize("stage") > 0;
}

StatusOr<Pipeline> LoadPipelineFile(const std::string& path) {
  errno = 0;
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::IoError("cannot open " + path + ": " + std::strerror(errno ? errno : ENOENT));
  std::ostringstream text;
  text << f.rdbuf();
  return ParsePipeline(text.str(), path);
}

StatusOr<Pipeline> ParsePipeline(std::string_view toml_text, const std::string& origin) {
  auto parsed = Config::Parse(toml_text, origin);
  if (!parsed.ok()) return parsed.status();
  const Config& c = *parsed;
  Pipeline p;
  p.digest = Digest(toml_text);
  std::string stem = origin.substr(origin.find_last_of('/') + 1);
  p.name = stem.substr(0, stem.rfind(".toml"));
  if (Status s = c.Get("name", &p.name); !s.ok()) return s;
  if (!NameOk(p.name))  // it goes into request keys, task classes and JSON as is
    return Status::InvalidArgument(origin + ": pipeline name '" + p.name +
                                   "': use letters, digits, '_', '-' or '.' (set `name` in the file)");
  const size_t n = c.ArraySize("stage");
  if (n == 0) return Status::InvalidArgument(origin + ": no [[stage]] tables");
  if (n > kMaxPipelineStages)
    return Status::InvalidArgument(origin + ": " + std::to_string(n) + " stages; the limit is " +
                                   std::to_string(kMaxPipelineStages));
  std::map<std::string, size_t> index;
  std::vector<std::string> names(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string key = "stage." + std::to_string(i) + ".name";
    if (Status s = c.Get(key, &names[i]); !s.ok()) return s;
    if (!NameOk(names[i]))
      return Status::InvalidArgument(origin + ": " + key + " = '" + names[i] +
                                     "': a stage needs a name of letters, digits, '_', '-' or '.'");
    if (!index.emplace(names[i], i).second)
      return Status::InvalidArgument(origin + ": two stages are named '" + names[i] + "'");
  }
  auto resolve = [&](const std::string& text, const std::string& key) -> StatusOr<uint64_t> {
    auto it = index.find(text);
    if (it == index.end()) return Status::InvalidArgument(origin + ": " + key + ": no stage named '" + text + "'");
    return static_cast<uint64_t>(it->second + 1);
  };
  std::vector<PipelineStage> stages(n);
  std::vector<bool> referenced(n, false);
  for (size_t i = 0; i < n; ++i) {
    PipelineStage& st = stages[i];
    st.name = names[i];
    auto spec = JobFromConfig(c, "stage." + std::to_string(i) + ".", st.name, resolve);
    if (!spec.ok()) return spec.status();
    st.spec = std::move(spec).value();
    st.spec.set_name(p.name + "/" + st.name);  // the stage's `name` is its job's too: say whose
    for (uint64_t a : st.spec.after()) st.after.push_back(static_cast<size_t>(a - 1));
    // Each stage is its own task class by default, so the predictors judge
    // a reduce task against reduce tasks, not against the maps.
    ForEachTask(st.spec, [&](wire::TaskSpec& t) {
      if (t.features().task_class().empty()) t.mutable_features()->set_task_class(p.name + "." + st.name);
      for (const wire::TaskRef& r : t.inputs()) {
        size_t from = static_cast<size_t>(r.job_id() - 1);
        referenced[from] = true;
        if (std::find(st.after.begin(), st.after.end(), from) == st.after.end()) st.after.push_back(from);
      }
    });
    if (std::find(st.after.begin(), st.after.end(), i) != st.after.end())
      return Status::InvalidArgument(origin + ": stage '" + st.name + "' names itself");
  }
  if (Status s = c.CheckAllUsed(); !s.ok()) return s;
  // Stages whose outputs others take keep them (unless they keep directories).
  for (size_t i = 0; i < n; ++i)
    if (referenced[i] && stages[i].spec.output_dir().empty()) stages[i].spec.set_return_outputs(true);
  // Parents first (Kahn), in file order among the ready ones; what is left is a cycle.
  std::vector<size_t> pending(n);
  for (size_t i = 0; i < n; ++i) pending[i] = stages[i].after.size();
  std::vector<size_t> order;
  std::vector<bool> done(n, false);
  while (order.size() < n) {
    size_t before = order.size();
    for (size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      bool ready = std::all_of(stages[i].after.begin(), stages[i].after.end(), [&](size_t a) { return done[a]; });
      if (!ready) continue;
      done[i] = true;
      order.push_back(i);
    }
    if (order.size() == before) {
      std::string cycle;
      for (size_t i = 0; i < n; ++i)
        if (!done[i]) cycle += (cycle.empty() ? "" : ", ") + stages[i].name;
      return Status::InvalidArgument(origin + ": the stages " + cycle + " wait for each other (a cycle)");
    }
  }
  // Renumber references to positions in the new order.
  std::vector<size_t> pos(n);
  for (size_t k = 0; k < n; ++k) pos[order[k]] = k;
  for (size_t k = 0; k < n; ++k) {
    PipelineStage st = stages[order[k]];
    for (size_t& a : st.after) a = pos[a];
    st.spec.clear_after();
    ForEachTask(st.spec, [&](wire::TaskSpec& t) {
      for (wire::TaskRef& r : *t.mutable_inputs()) r.set_job_id(pos[r.job_id() - 1] + 1);
    });
    p.stages.push_back(std::move(st));
  }
  return p;
}

Status SubmitPipeline(Client& client, const Pipeline& p, std::vector<PipelineJob>* submitted, const std::string& run) {
  std::vector<PipelineJob>& jobs = *submitted;
  jobs.clear();
  for (const PipelineStage& st : p.stages) {
    wire::JobSpec spec = st.spec;
    for (size_t a : st.after) spec.add_after(jobs[a].job);
    ForEachTask(spec, [&](wire::TaskSpec& t) {
      for (wire::TaskRef& r : *t.mutable_inputs()) r.set_job_id(jobs[r.job_id() - 1].job);
    });
    spec.set_request_key("pipeline:" + p.name + ":" + p.digest + (run.empty() ? "" : ":" + run) + ":" + st.name);
    auto id = client.Submit(spec);
    if (!id.ok()) return id.status();
    jobs.push_back({st.name, *id});
  }
  return Status::Ok();
}

}  // namespace tailcut
