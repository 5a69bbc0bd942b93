#include "tailcut/policies/coded_jobs.h"

namespace tailcut::coded {

StatusOr<JobDef> MakeCodedMatVecJob(const coding::MdsCode& code, const coding::Matrix& a, const std::vector<double>& x,
                                    std::string name) {
  if (static_cast<int>(x.size()) != a.cols())
    return Status::InvalidArgument("coded matvec: x has " + std::to_string(x.size()) + " values, A has " +
                                   std::to_string(a.cols()) + " columns");
  if (a.rows() == 0) return Status::InvalidArgument("coded matvec: A is empty");
  std::vector<coding::Matrix> blocks = code.Encode(a);
  JobDef j;
  j.name = std::move(name);
  for (int b = 0; b < static_cast<int>(blocks.size()); ++b) {
    TaskDef t;
    t.kernel = kMatmulKernel;
    t.args = MatmulArgs(b, blocks[b], x);
    t.input_size = static_cast<double>(blocks[b].rows()) * blocks[b].cols();
    j.tasks.push_back(std::move(t));
  }
  j.rule.kind = CompletionKind::kKOfN;
  j.rule.k = static_cast<uint32_t>(code.k());
  j.return_outputs = true;
  return j;
}

StatusOr<std::vector<double>> DecodeCodedMatVec(const coding::MdsCode& code, int original_rows,
                                                const std::vector<CommittedOutput>& outputs) {
  std::vector<std::pair<int, coding::Matrix>> results;
  for (const CommittedOutput& o : outputs) {
    auto v = DecodeVector(o.output);
    if (!v.ok()) return Status::InvalidArgument("task " + std::to_string(o.task) + ": " + v.status().message());
    int len = static_cast<int>(v->size());
    auto m = coding::Matrix::FromData(len, 1, std::move(*v));
    if (!m.ok()) return m.status();
    results.emplace_back(static_cast<int>(o.task), std::move(*m));
  }
  auto y = code.Decode(results, original_rows);
  if (!y.ok()) return y.status();
  return y->data();
}

StatusOr<GradientRoundJobs> GradientRoundJobs::Create(const coding::GradientCode& code,
                                                      const std::vector<LsqPartition>& parts, long dim, Loss loss) {
  int n = code.n();
  if (static_cast<int>(parts.size()) != n)
    return Status::InvalidArgument("gradient round: " + std::to_string(parts.size()) +
                                   " partitions for n = " + std::to_string(n) + " workers");
  for (auto& p : parts)
    if (p.x.cols() != dim || static_cast<long>(p.y.size()) != p.x.rows())
      return Status::InvalidArgument("gradient round: partition shape does not match w / y");
  GradientRoundJobs j;
  const std::vector<double> no_w;
  for (int i = 0; i < n; ++i) {
    std::vector<int> ps = code.PartitionsOf(i);
    std::vector<double> coeffs;
    std::vector<const LsqPartition*> pp;
    double rows = 0;
    for (int p : ps) {
      coeffs.push_back(code.encoding()(i, p));
      pp.push_back(&parts[p]);
      rows += parts[p].x.rows();
    }
    // GradientArgs with an empty w, then the header's dim patched in.
    std::string args = GradientArgs(i, coeffs, pp, no_w, loss);
    std::string header = loss == Loss::kLeastSquares ? "tcgw1 " : std::string("tcgw2 ") + LossName(loss) + " ";
    header += std::to_string(i) + " ";
    args.replace(0, header.size() + 1, header + std::to_string(dim));  // "... <worker> 0" -> "... <worker> <dim>"
    j.prefix_.push_back(std::move(args));
    j.rows_.push_back(rows);
  }
  j.k_ = static_cast<uint32_t>(n - code.s());
  return j;
}

JobDef GradientRoundJobs::Round(const std::vector<double>& w, std::string name) const {
  JobDef j;
  j.name = std::move(name);
  std::string tail;
  AppendReals(&tail, w);
  for (size_t i = 0; i < prefix_.size(); ++i) {
    TaskDef t;
    t.kernel = kGradientKernel;
    t.args.reserve(prefix_[i].size() + tail.size());
    t.args = prefix_[i] + tail;
    t.input_size = rows_[i];
    j.tasks.push_back(std::move(t));
  }
  j.rule.kind = CompletionKind::kKOfN;
  j.rule.k = k_;
  j.return_outputs = true;
  return j;
}

StatusOr<JobDef> MakeGradientRoundJob(const coding::GradientCode& code, const std::vector<LsqPartition>& parts,
                                      const std::vector<double>& w, std::string name, Loss loss) {
  auto jobs = GradientRoundJobs::Create(code, parts, static_cast<long>(w.size()), loss);
  if (!jobs.ok()) return jobs.status();
  return jobs->Round(w, std::move(name));
}

StatusOr<std::vector<double>> DecodeGradientRound(const coding::GradientCode& code,
                                                  const std::vector<CommittedOutput>& outputs) {
  std::vector<std::pair<int, std::vector<double>>> coded;
  for (const CommittedOutput& o : outputs) {
    auto v = DecodeVector(o.output);
    if (!v.ok()) return Status::InvalidArgument("worker " + std::to_string(o.task) + ": " + v.status().message());
    coded.emplace_back(static_cast<int>(o.task), std::move(*v));
  }
  return code.Decode(coded);
}

}  // namespace tailcut::coded
