// Table, JSON, CSV and SVG output of simulation results.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tailcut/sim/command.h"

namespace tailcut::sim {

std::string Num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

namespace {

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Seconds with a unit that keeps 3-4 significant digits readable.
std::string Secs(double s) {
  char buf[32];
  if (s >= 100) std::snprintf(buf, sizeof buf, "%.1f", s);
  else if (s >= 1) std::snprintf(buf, sizeof buf, "%.3f", s);
  else std::snprintf(buf, sizeof buf, "%.4f", s);
  return buf;
}

// Two decimals; "-" for a ratio that has no reference.
std::string Ratio(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

void PrintTable(std::FILE* out, const std::vector<SimResult>& results, const std::vector<SimResult>& refs) {
  size_t w = 7;
  for (auto& r : results) w = std::max(w, r.policy.size());
  for (auto& r : refs) w = std::max(w, r.policy.size() + 2);
  std::fprintf(out, "%-*s %8s %10s %10s %10s %10s %10s %9s %8s %7s %7s %8s\n", static_cast<int>(w), "POLICY", "JOBS",
               "MEAN_S", "P50_S", "P90_S", "P99_S", "P99.9_S", "EXTRA_%", "COPIES", "P50/B", "P99/B", "XMACH_%");
  auto row = [&](const SimResult& r, const std::string& name, bool is_bound) {
    std::fprintf(out, "%-*s %8llu %10s %10s %10s %10s %10s %9s %8s %7s %7s %8s", static_cast<int>(w), name.c_str(),
                 static_cast<unsigned long long>(r.jobs), Secs(r.mean).c_str(), Secs(r.p50).c_str(),
                 Secs(r.p90).c_str(), Secs(r.p99).c_str(), Secs(r.p999).c_str(),
                 is_bound ? "-" : Ratio(100 * r.extra_work).c_str(),
                 is_bound ? "-" : std::to_string(r.copies).c_str(), Ratio(r.p50 / r.bound_p50).c_str(),
                 Ratio(r.p99 / r.bound_p99).c_str(), Ratio(100 * r.extra_machine).c_str());
    if (r.failed) std::fprintf(out, "  (%llu failed)", static_cast<unsigned long long>(r.failed));
    if (r.unfinished) std::fprintf(out, "  (%llu unfinished)", static_cast<unsigned long long>(r.unfinished));
    std::fprintf(out, "\n");
    for (const OwnerResult& o : r.owners)
      std::fprintf(out, "  owner %-12s %8llu jobs, p50 %s s, p99 %s s; task queue wait p50 %s s, p99 %s s\n",
                   o.owner.empty() ? "(none)" : o.owner.c_str(), static_cast<unsigned long long>(o.jobs),
                   Secs(o.p50).c_str(), Secs(o.p99).c_str(), Secs(o.wait_p50).c_str(), Secs(o.wait_p99).c_str());
  };
  for (auto& r : results) row(r, r.policy, false);
  for (const SimResult& r : refs) row(r, "(" + r.policy + ")", r.policy == "bound");
  for (const SimResult& r : refs) {
    if (r.policy == "bound")
      std::fprintf(out,
                   "(bound): clairvoyant list schedule without stragglers, each quantile at most none's "
                   "(docs/benchmarks/tail.md); P50/B, P99/B: multiples of it; XMACH_%%: machine time vs none\n");
    else if (r.policy == "online" && r.online_ratio > 0)
      std::fprintf(out,
                   "(online): best single threshold knowing the distribution: copy or restart at %.2f x the "
                   "median run time (docs/benchmarks/tail.md)\n",
                   r.online_ratio);
    else if (r.policy == "online")
      std::fprintf(out, "(online): best single threshold knowing the distribution: never acting (as none)\n");
  }
}

std::string ResultsJson(const std::vector<SimResult>& results) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < results.size(); ++i) {
    const SimResult& r = results[i];
    o << (i ? ",\n " : "") << "{\"policy\": " << JsonString(r.policy) << ", \"jobs\": " << r.jobs
      << ", \"mean\": " << Num(r.mean) << ", \"p50\": " << Num(r.p50) << ", \"p90\": " << Num(r.p90)
      << ", \"p99\": " << Num(r.p99) << ", \"p999\": " << Num(r.p999) << ", \"extra_work\": " << Num(r.extra_work)
      << ", \"extra_machine\": " << Num(r.extra_machine) << ", \"bound_p50\": " << Num(r.bound_p50)
      << ", \"bound_p99\": " << Num(r.bound_p99) << ", \"p50_x_bound\": " << Num(r.p50 / r.bound_p50)
      << ", \"p99_x_bound\": " << Num(r.p99 / r.bound_p99);
    if (!std::isnan(r.online_ratio)) o << ", \"online_ratio\": " << Num(r.online_ratio);
    if (!r.owners.empty()) {
      o << ", \"owners\": [";
      for (size_t k = 0; k < r.owners.size(); ++k) {
        const OwnerResult& w = r.owners[k];
        o << (k ? ", " : "") << "{\"owner\": " << JsonString(w.owner) << ", \"jobs\": " << w.jobs
          << ", \"p50\": " << Num(w.p50) << ", \"p99\": " << Num(w.p99) << ", \"wait_p50\": " << Num(w.wait_p50)
          << ", \"wait_p99\": " << Num(w.wait_p99) << "}";
      }
      o << "]";
    }
    o
      << ", \"copies\": " << r.copies << ", \"failed\": " << r.failed << ", \"unfinished\": " << r.unfinished
      << ", \"tasks\": " << r.tasks << ", \"attempts\": " << r.attempts << ", \"virtual_s\": " << Num(r.virtual_s)
      << ", \"machine_s\": " << Num(r.machine_s) << ", \"committed_s\": " << Num(r.committed_s)
      << ", \"events\": " << r.events << ", \"wall_s\": " << Num(r.wall_s) << "}";
  }
  o << "]";
  return o.str();
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return Status::IoError("cannot write '" + path + "'");
  f << text;
  f.close();
  if (!f) return Status::IoError("error writing '" + path + "'");
  return Status::Ok();
}

Status WriteLatencyCsv(const std::string& path, const std::vector<SimResult>& results) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return Status::IoError("cannot write '" + path + "'");
  f << "policy,job,latency_s\n";
  char buf[64];
  for (auto& r : results)
    for (size_t i = 0; i < r.latencies.size(); ++i) {
      if (std::isnan(r.latencies[i])) continue;  // unfinished
      std::snprintf(buf, sizeof buf, "%.9g", r.latencies[i]);
      f << r.policy << ',' << i + 1 << ',' << buf << '\n';
    }
  f.close();
  if (!f) return Status::IoError("error writing '" + path + "'");
  return Status::Ok();
}

std::string CdfSvg(const std::vector<SimResult>& results, const std::string& title) {
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
  const double W = 760, H = 480, L = 70, R = 20, T = 40, B = 60;
  const double pw = W - L - R, ph = H - T - B;
  // x range over all policies, in decades.
  double lo = INFINITY, hi = 0;
  for (auto& r : results)
    for (double x : r.latencies)
      if (x > 0) lo = std::min(lo, x), hi = std::max(hi, x);
  if (!std::isfinite(lo)) lo = 0.1, hi = 1;
  double dlo = std::floor(std::log10(lo)), dhi = std::ceil(std::log10(hi));
  if (dhi <= dlo) dhi = dlo + 1;
  auto X = [&](double v) { return L + pw * (std::log10(std::max(v, std::pow(10.0, dlo))) - dlo) / (dhi - dlo); };
  auto Y = [&](double f) { return T + ph * (1 - f); };
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << " " << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << XmlEscape(title)
    << "</text>\n";
  // Grid and ticks: decades (and 2x, 5x minor lines) on x, tenths on y.
  for (double d = dlo; d <= dhi + 1e-9; d += 1) {
    double v = std::pow(10.0, d);
    s << "<line x1=\"" << X(v) << "\" y1=\"" << T << "\" x2=\"" << X(v) << "\" y2=\"" << T + ph
      << "\" stroke=\"#ccc\"/>\n";
    char lab[32];
    std::snprintf(lab, sizeof lab, "%g", v);
    s << "<text x=\"" << X(v) << "\" y=\"" << T + ph + 18 << "\" text-anchor=\"middle\">" << lab << "</text>\n";
    for (double m : {2.0, 5.0})
      if (d < dhi)
        s << "<line x1=\"" << X(m * v) << "\" y1=\"" << T << "\" x2=\"" << X(m * v) << "\" y2=\"" << T + ph
          << "\" stroke=\"#eee\"/>\n";
  }
  for (int i = 0; i <= 10; ++i) {
    double f = i / 10.0;
    s << "<line x1=\"" << L << "\" y1=\"" << Y(f) << "\" x2=\"" << L + pw << "\" y2=\"" << Y(f) << "\" stroke=\""
      << (i % 5 ? "#eee" : "#ccc") << "\"/>\n";
    s << "<text x=\"" << L - 6 << "\" y=\"" << Y(f) + 4 << "\" text-anchor=\"end\">" << (i % 2 ? "" : std::to_string(i * 10) + "%")
      << "</text>\n";
  }
  s << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#333\"/>\n";
  s << "<text x=\"" << L + pw / 2 << "\" y=\"" << H - 15
    << "\" text-anchor=\"middle\">job latency, seconds (log scale)</text>\n";
  s << "<text transform=\"translate(18," << T + ph / 2
    << ") rotate(-90)\" text-anchor=\"middle\">fraction of jobs finished within x</text>\n";
  // One step line per policy, at most ~1000 points each.
  for (size_t p = 0; p < results.size(); ++p) {
    std::vector<double> v;
    for (double x : results[p].latencies)
      if (!std::isnan(x)) v.push_back(x);
    std::sort(v.begin(), v.end());
    if (v.empty()) continue;
    size_t n = v.size(), step = std::max<size_t>(1, n / 1000);
    size_t tail = n - std::min<size_t>(n, 200);  // the last 200 points exactly
    s << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << kColors[p % 10] << "\" points=\"";
    s.precision(2);
    s << X(v[0]) << "," << Y(0) << " ";
    for (size_t i = 0; i < tail; i += step) s << X(v[i]) << "," << Y(static_cast<double>(i + 1) / n) << " ";
    for (size_t i = tail; i < n; ++i) s << X(v[i]) << "," << Y(static_cast<double>(i + 1) / n) << " ";
    s.precision(1);
    s << "\"/>\n";
  }
  // Legend, bottom right (CDFs rise to the top left... and right).
  double lx = L + pw - 200, ly = T + ph - 14 - 18.0 * results.size();
  s << "<rect x=\"" << lx - 8 << "\" y=\"" << ly - 14 << "\" width=\"200\" height=\"" << 18.0 * results.size() + 10
    << "\" fill=\"white\" stroke=\"#999\" opacity=\"0.9\"/>\n";
  for (size_t p = 0; p < results.size(); ++p) {
    double y = ly + 18.0 * p;
    s << "<line x1=\"" << lx << "\" y1=\"" << y - 4 << "\" x2=\"" << lx + 24 << "\" y2=\"" << y - 4
      << "\" stroke-width=\"3\" stroke=\"" << kColors[p % 10] << "\"/>\n";
    char lab[64];
    std::snprintf(lab, sizeof lab, " (p99 %s s)", Secs(results[p].p99).c_str());
    s << "<text x=\"" << lx + 30 << "\" y=\"" << y << "\">" << XmlEscape(results[p].policy) << lab << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

uint64_t PeakRssBytes() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;  // Linux: kilobytes
}

}  // namespace tailcut::sim
