#include "tailcut/coding/task_args.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdio>

namespace tailcut::coded {
namespace {

void Put(std::string* out, double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, " %.17g", d);
  *out += buf;
}

// Reads whitespace-separated tokens; any failure sticks. A plain cursor with
// strtol/strtod: these args are megabytes of numbers, and an istringstream
// costs several times more per token.
struct Reader {
  const char* p;
  const char* end;
  bool ok = true;
  explicit Reader(const std::string& s) : p(s.c_str()), end(s.c_str() + s.size()) {}
  void SkipSpace() {
    while (p < end && std::isspace(static_cast<unsigned char>(*p))) ++p;
  }
  bool AtTokenEnd(const char* q) const { return q == end || std::isspace(static_cast<unsigned char>(*q)); }
  std::string Word() {
    SkipSpace();
    const char* b = p;
    while (p < end && !std::isspace(static_cast<unsigned char>(*p))) ++p;
    if (b == p) ok = false;
    return std::string(b, p);
  }
  long Int(long lo, long hi) {
    SkipSpace();
    char* q = nullptr;
    long v = std::strtol(p, &q, 10);
    if (q == p || !AtTokenEnd(q) || v < lo || v > hi) ok = false;
    p = q;
    return v;
  }
  double Real() {
    SkipSpace();
    if (p == end) {
      ok = false;
      return 0;
    }
    char* q = nullptr;
    double d = std::strtod(p, &q);
    if (q == p || !AtTokenEnd(q)) {
      ok = false;
      return 0;
    }
    p = q;
    return d;
  }
  // Whether n more numbers can still follow (each takes a character and a
  // separator): checked before allocating for them, so that a few bytes of
  // header cannot make the executor allocate gigabytes.
  bool Room(long n) const { return n >= 0 && n <= (end - p + 1) / 2; }
  void Reals(size_t n, double* out) {
    for (size_t i = 0; i < n && ok; ++i) out[i] = Real();
  }
};

constexpr long kMaxDim = 1 << 24;

}  // namespace

void AppendReals(std::string* out, const std::vector<double>& v) {
  for (double d : v) Put(out, d);
}

std::string EncodeVector(const std::vector<double>& v) {
  std::string out = "tcv1 " + std::to_string(v.size());
  for (double d : v) Put(&out, d);
  return out;
}

StatusOr<std::vector<double>> DecodeVector(const std::string& s) {
  Reader r(s);
  if (r.Word() != "tcv1") return Status::InvalidArgument("not a tcv1 vector");
  long n = r.Int(0, kMaxDim);
  if (!r.ok || !r.Room(n)) return Status::InvalidArgument("malformed tcv1 vector");
  std::vector<double> v(static_cast<size_t>(n));
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

StatusOr<MatVecTask> ParseMatmulArgs(const std::string& args) {
  Reader r(args);
  if (r.Word() != "tcmm1") return Status::InvalidArgument("coded_matmul: args are not tcmm1");
  MatVecTask t;
  t.block = static_cast<int>(r.Int(0, kMaxDim));  // block index: informational
  long rows = r.Int(0, kMaxDim), cols = r.Int(0, kMaxDim);
  if (!r.ok || rows * cols > kMaxDim || !r.Room(rows * cols + cols))
    return Status::InvalidArgument("coded_matmul: bad block shape (or fewer values than it needs)");
  t.rows = rows;
  t.cols = cols;
  t.a.resize(static_cast<size_t>(rows * cols));
  r.Reals(t.a.size(), t.a.data());
  long xl = r.Int(0, kMaxDim);
  if (r.ok && xl != cols) return Status::InvalidArgument("coded_matmul: x has " + std::to_string(xl) +
                                                         " values for a block with " + std::to_string(cols) + " columns");
  t.x.resize(static_cast<size_t>(cols));
  r.Reals(t.x.size(), t.x.data());
  if (!r.ok) return Status::InvalidArgument("coded_matmul: malformed args");
  return t;
}

std::vector<double> ComputeMatVec(const MatVecTask& t) {
  std::vector<double> y(static_cast<size_t>(t.rows), 0.0);
  for (long i = 0; i < t.rows; ++i)
    for (long j = 0; j < t.cols; ++j) y[i] += t.a[i * t.cols + j] * t.x[j];
  return y;
}

StatusOr<std::string> RunMatmulKernel(const std::string& args) {
  auto t = ParseMatmulArgs(args);
  if (!t.ok()) return t.status();
  return EncodeVector(ComputeMatVec(*t));
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

namespace {
double Sigmoid(double z) {
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  double e = std::exp(z);
  return e / (1.0 + e);
}
}  // namespace

const char* LossName(Loss loss) { return loss == Loss::kLogistic ? "logistic" : "lsq"; }

std::vector<double> LogisticGradient(const LsqPartition& p, const std::vector<double>& w) {
  int dim = p.x.cols();
  std::vector<double> g(static_cast<size_t>(dim), 0.0);
  for (int i = 0; i < p.x.rows(); ++i) {
    double z = 0;
    for (int j = 0; j < dim; ++j) z += p.x(i, j) * w[j];
    double r = Sigmoid(z) - p.y[i];
    for (int j = 0; j < dim; ++j) g[j] += p.x(i, j) * r;
  }
  return g;
}

double PartitionLoss(Loss loss, const LsqPartition& p, const std::vector<double>& w) {
  double sum = 0;
  for (int i = 0; i < p.x.rows(); ++i) {
    double z = 0;
    for (int j = 0; j < p.x.cols(); ++j) z += p.x(i, j) * w[j];
    if (loss == Loss::kLogistic) {
      // log(1 + e^z) - y z, computed without overflow.
      sum += (z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z))) - p.y[i] * z;
    } else {
      sum += 0.5 * (z - p.y[i]) * (z - p.y[i]);
    }
  }
  return sum;
}

std::string GradientArgs(int worker, const std::vector<double>& coeffs, const std::vector<const LsqPartition*>& parts,
                         const std::vector<double>& w, Loss loss) {
  std::string out = loss == Loss::kLeastSquares ? std::string("tcgw1 ") : std::string("tcgw2 ") + LossName(loss) + " ";
  out += std::to_string(worker) + " " + std::to_string(w.size()) + " " + std::to_string(parts.size());
  for (size_t t = 0; t < parts.size(); ++t) {
    Put(&out, coeffs[t]);
    out += " " + std::to_string(parts[t]->x.rows());
    for (double d : parts[t]->x.data()) Put(&out, d);
    for (double d : parts[t]->y) Put(&out, d);
  }
  for (double d : w) Put(&out, d);
  return out;
}

StatusOr<GradientTask> ParseGradientArgs(const std::string& args) {
  Reader r(args);
  GradientTask t;
  std::string magic = r.Word();
  if (magic == "tcgw2") {
    std::string loss = r.Word();
    if (loss == "lsq") {
      t.loss = Loss::kLeastSquares;
    } else if (loss == "logistic") {
      t.loss = Loss::kLogistic;
    } else {
      return Status::InvalidArgument("gradient_worker: unknown loss '" + loss + "' (lsq, logistic)");
    }
  } else if (magic != "tcgw1") {
    return Status::InvalidArgument("gradient_worker: args are not tcgw1/tcgw2");
  }
  t.worker = static_cast<int>(r.Int(0, kMaxDim));  // informational
  long dim = r.Int(1, kMaxDim), np = r.Int(0, 1 << 16);
  if (!r.ok || !r.Room(dim + 2 * np)) return Status::InvalidArgument("gradient_worker: bad header");
  t.dim = dim;
  t.coeff.resize(static_cast<size_t>(np));
  t.parts.resize(static_cast<size_t>(np));
  for (long i = 0; i < np && r.ok; ++i) {
    t.coeff[i] = r.Real();
    long rows = r.Int(0, kMaxDim);
    if (!r.ok || rows * dim > kMaxDim || !r.Room(rows * dim + rows))
      return Status::InvalidArgument("gradient_worker: bad partition shape");
    t.parts[i].x = coding::Matrix(static_cast<int>(rows), static_cast<int>(dim));
    r.Reals(t.parts[i].x.data().size(), t.parts[i].x.data().data());
    t.parts[i].y.resize(static_cast<size_t>(rows));
    r.Reals(t.parts[i].y.size(), t.parts[i].y.data());
  }
  t.w.resize(static_cast<size_t>(dim));
  r.Reals(t.w.size(), t.w.data());
  if (!r.ok) return Status::InvalidArgument("gradient_worker: malformed args");
  return t;
}

namespace {
constexpr const char kShareMagic[] = "tcgs1 ";
}  // namespace

std::string ShareGradientPrefix(const std::vector<LsqPartition>& parts, Loss loss) {
  long dim = parts.empty() ? 0 : parts[0].x.cols();
  long rows = 0;
  std::vector<std::string> records;
  size_t width = 0;
  for (const LsqPartition& p : parts) {
    for (int i = 0; i < p.x.rows(); ++i, ++rows) {
      std::string rec;
      for (long j = 0; j < dim; ++j) Put(&rec, p.x(i, static_cast<int>(j)));
      Put(&rec, p.y[i]);
      rec += ' ';  // a record always ends in a separator
      width = std::max(width, rec.size());
      records.push_back(std::move(rec));
    }
  }
  std::string out = std::string(kShareMagic) + LossName(loss) + " " + std::to_string(dim) + " " +
                    std::to_string(rows) + " " + std::to_string(width) + "\n";
  out.reserve(out.size() + width * records.size());
  for (const std::string& r : records) out += r + std::string(width - r.size(), ' ');
  return out;
}

bool IsShareGradientArgs(const std::string& args) { return args.rfind(kShareMagic, 0) == 0; }

StatusOr<GradientTask> ParseShareGradientArgs(const std::string& args, uint64_t begin, uint64_t count,
                                              uint64_t total) {
  const size_t nl = args.find('\n');
  if (!IsShareGradientArgs(args) || nl == std::string::npos)
    return Status::InvalidArgument("gradient_worker: args are not tcgs1");
  std::string header = args.substr(0, nl);
  Reader h(header);
  h.Word();
  GradientTask t;
  std::string loss = h.Word();
  if (loss == "logistic") {
    t.loss = Loss::kLogistic;
  } else if (loss != "lsq") {
    return Status::InvalidArgument("gradient_worker: unknown loss '" + loss + "' (lsq, logistic)");
  }
  long dim = h.Int(1, kMaxDim), rows = h.Int(0, kMaxDim), width = h.Int(1, kMaxDim);
  const size_t data = nl + 1;
  // Every record holds dim + 1 numbers of at least two bytes each.
  if (!h.ok || width < 2 * (dim + 1) || static_cast<double>(rows) * width > static_cast<double>(args.size() - data))
    return Status::InvalidArgument("gradient_worker: bad tcgs1 header");
  if (total != static_cast<uint64_t>(rows) || begin > total || count > total - begin)
    return Status::InvalidArgument("gradient_worker: work share [" + std::to_string(begin) + ", +" +
                                   std::to_string(count) + ") of " + std::to_string(total) + " does not fit " +
                                   std::to_string(rows) + " rows (submit it with divisible_units = rows)");
  if (static_cast<double>(count) * dim > kMaxDim) return Status::InvalidArgument("gradient_worker: share too large");
  t.dim = dim;
  t.coeff = {1.0};
  t.parts.resize(1);
  LsqPartition& part = t.parts[0];
  part.x = coding::Matrix(static_cast<int>(count), static_cast<int>(dim));
  part.y.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    // A record alone, so a malformed one cannot read into the next.
    std::string rec = args.substr(data + (begin + i) * width, static_cast<size_t>(width));
    Reader r(rec);
    r.Reals(static_cast<size_t>(dim), part.x.row(static_cast<int>(i)));
    part.y[i] = r.Real();
    if (!r.ok) return Status::InvalidArgument("gradient_worker: malformed record " + std::to_string(begin + i));
  }
  std::string tail = args.substr(data + static_cast<size_t>(rows) * width);
  Reader r(tail);
  t.w.resize(static_cast<size_t>(dim));
  r.Reals(t.w.size(), t.w.data());
  if (!r.ok) return Status::InvalidArgument("gradient_worker: malformed w");
  return t;
}

std::vector<double> ComputeGradient(const GradientTask& t) {
  std::vector<double> g(static_cast<size_t>(t.dim), 0.0);
  for (size_t i = 0; i < t.parts.size(); ++i) {
    std::vector<double> gt =
        t.loss == Loss::kLogistic ? LogisticGradient(t.parts[i], t.w) : LsqGradient(t.parts[i], t.w);
    for (long j = 0; j < t.dim; ++j) g[j] += t.coeff[i] * gt[j];
  }
  return g;
}

StatusOr<std::string> RunGradientKernel(const std::string& args) {
  auto t = ParseGradientArgs(args);
  if (!t.ok()) return t.status();
  return EncodeVector(ComputeGradient(*t));
}

}  // namespace tailcut::coded
