#include "tailcut/plugins/coded_jobs.h"

#include <cstdio>
#include <sstream>

namespace tailcut::coded {
namespace {

void Put(std::string* out, double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, " %.17g", d);
  *out += buf;
}

// Reads whitespace-separated tokens; any failure sticks.
struct Reader {
  std::istringstream in;
  bool ok = true;
  explicit Reader(const std::string& s) : in(s) {}
  std::string Word() {
    std::string w;
    if (!(in >> w)) ok = false;
    return w;
  }
  long Int(long lo, long hi) {
    long v = 0;
    if (!(in >> v) || v < lo || v > hi) ok = false;
    return v;
  }
  double Real() {
    std::string w;
    if (!(in >> w)) {
      ok = false;
      return 0;
    }
    char* end = nullptr;
    double d = std::strtod(w.c_str(), &end);
    if (end == w.c_str() || *end) ok = false;
    return d;
  }
  void Reals(size_t n, double* out) {
    for (size_t i = 0; i < n && ok; ++i) out[i] = Real();
  }
};

constexpr long kMaxDim = 1 << 24;

}  // namespace

std::string EncodeVector(const std::vector<double>& v) {
  std::string out = "tcv1 " + std::to_string(v.size());
  for (double d : v) Put(&out, d);
  return out;
}

StatusOr<std::vector<double>> DecodeVector(const std::string& s) {
  Reader r(s);
  if (r.Word() != "tcv1") return Status::InvalidArgument("not a tcv1 vector");
  std::vector<double> v(static_cast<size_t>(r.Int(0, kMaxDim)));
  r.Reals(v.size(), v.data());
  if (!r.ok) return Status::InvalidArgument("malformed tcv1 vector");
  return v;
}

std::string MatmulArgs(int block, const coding::Matrix& a, const std::vector<double>& x) {
  std::string out = "tcmm1 " + std::to_string(block) + " " + std::to_string(a.rows()) + " " + std::to_string(a.cols());
  for (double d : a.data()) Put(&out, d);
  out += " " + std::to_string(x.size());
  for (double d : x) Put(&out, d);
  return out;
}

StatusOr<std::string> RunMatmulKernel(const std::string& args) {
  Reader r(args);
  if (r.Word() != "tcmm1") return Status::InvalidArgument("coded_matmul: args are not tcmm1");
  r.Int(0, kMaxDim);  // block index: informational
  long rows = r.Int(0, kMaxDim), cols = r.Int(0, kMaxDim);
  if (!r.ok || rows * cols > kMaxDim) return Status::InvalidArgument("coded_matmul: bad block shape");
  std::vector<double> a(static_cast<size_t>(rows * cols));
  r.Reals(a.size(), a.data());
  long xl = r.Int(0, kMaxDim);
  if (r.ok && xl != cols) return Status::InvalidArgument("coded_matmul: x has " + std::to_string(xl) +
                                                         " values for a block with " + std::to_string(cols) + " columns");
  std::vector<double> x(static_cast<size_t>(cols));
  r.Reals(x.size(), x.data());
  if (!r.ok) return Status::InvalidArgument("coded_matmul: malformed args");
  std::vector<double> y(static_cast<size_t>(rows), 0.0);
  for (long i = 0; i < rows; ++i)
    for (long j = 0; j < cols; ++j) y[i] += a[i * cols + j] * x[j];
  return EncodeVector(y);
}

StatusOr<JobDef> MakeCodedMatVecJob(const coding::MdsCode& code, const coding::Matrix& a,
                                    const std::vector<double>& x, std::string name) {
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

std::vector<double> LsqGradient(const LsqPartition& p, const std::vector<double>& w) {
  int dim = p.x.cols();
  std::vector<double> g(static_cast<size_t>(dim), 0.0);
  for (int i = 0; i < p.x.rows(); ++i) {
    double r = -p.y[i];
    for (int j = 0; j < dim; ++j) r += p.x(i, j) * w[j];
    for (int j = 0; j < dim; ++j) g[j] += p.x(i, j) * r;
  }
  return g;
}

std::string GradientArgs(int worker, const std::vector<double>& coeffs, const std::vector<const LsqPartition*>& parts,
                         const std::vector<double>& w) {
  std::string out = "tcgw1 " + std::to_string(worker) + " " + std::to_string(w.size()) + " " +
                    std::to_string(parts.size());
  for (size_t t = 0; t < parts.size(); ++t) {
    Put(&out, coeffs[t]);
    out += " " + std::to_string(parts[t]->x.rows());
    for (double d : parts[t]->x.data()) Put(&out, d);
    for (double d : parts[t]->y) Put(&out, d);
  }
  for (double d : w) Put(&out, d);
  return out;
}

StatusOr<std::string> RunGradientKernel(const std::string& args) {
  Reader r(args);
  if (r.Word() != "tcgw1") return Status::InvalidArgument("gradient_worker: args are not tcgw1");
  r.Int(0, kMaxDim);  // worker: informational
  long dim = r.Int(1, kMaxDim), np = r.Int(0, 1 << 16);
  if (!r.ok) return Status::InvalidArgument("gradient_worker: bad header");
  std::vector<double> coeff(static_cast<size_t>(np));
  std::vector<LsqPartition> parts(static_cast<size_t>(np));
  for (long t = 0; t < np && r.ok; ++t) {
    coeff[t] = r.Real();
    long rows = r.Int(0, kMaxDim);
    if (!r.ok || rows * dim > kMaxDim) return Status::InvalidArgument("gradient_worker: bad partition shape");
    parts[t].x = coding::Matrix(static_cast<int>(rows), static_cast<int>(dim));
    r.Reals(parts[t].x.data().size(), parts[t].x.data().data());
    parts[t].y.resize(static_cast<size_t>(rows));
    r.Reals(parts[t].y.size(), parts[t].y.data());
  }
  std::vector<double> w(static_cast<size_t>(dim));
  r.Reals(w.size(), w.data());
  if (!r.ok) return Status::InvalidArgument("gradient_worker: malformed args");
  std::vector<double> g(static_cast<size_t>(dim), 0.0);
  for (long t = 0; t < np; ++t) {
    std::vector<double> gt = LsqGradient(parts[t], w);
    for (long j = 0; j < dim; ++j) g[j] += coeff[t] * gt[j];
  }
  return EncodeVector(g);
}

StatusOr<JobDef> MakeGradientRoundJob(const coding::GradientCode& code, const std::vector<LsqPartition>& parts,
                                      const std::vector<double>& w, std::string name) {
  int n = code.n();
  if (static_cast<int>(parts.size()) != n)
    return Status::InvalidArgument("gradient round: " + std::to_string(parts.size()) + " partitions for n = " +
                                   std::to_string(n) + " workers");
  for (auto& p : parts)
    if (p.x.cols() != static_cast<int>(w.size()) || static_cast<int>(p.y.size()) != p.x.rows())
      return Status::InvalidArgument("gradient round: partition shape does not match w / y");
  JobDef j;
  j.name = std::move(name);
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
    TaskDef t;
    t.kernel = kGradientKernel;
    t.args = GradientArgs(i, coeffs, pp, w);
    t.input_size = rows;
    j.tasks.push_back(std::move(t));
  }
  j.rule.kind = CompletionKind::kKOfN;
  j.rule.k = static_cast<uint32_t>(n - code.s());
  j.return_outputs = true;
  return j;
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
