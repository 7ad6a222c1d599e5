#include "demand_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include "base/strings.h"

namespace warren::bench {
namespace {

// Uniform in [0, 1) from 53 random bits.
double Uniform(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

double Exponential(std::mt19937_64& rng, double rate) {
  return -std::log(1.0 - Uniform(rng)) / rate;
}

double Bump(double h, double center, double width) {
  double x = (h - center) / width;
  return std::exp(-0.5 * x * x);
}

// Claims per second at hour `h` of the day, before quiet periods.
double DiurnalRate(double h, double day_scale) {
  double r = 0.02 + 2.2 * Bump(h, 10.0, 1.6) + 3.0 * Bump(h, 15.5, 2.0) + 0.6 * Bump(h, 20.5, 1.5) -
             1.2 * Bump(h, 12.5, 0.5);
  return std::max(0.01, r * day_scale);
}

}  // namespace

DemandTrace SyntheticDay(uint64_t seed, double hours) {
  std::mt19937_64 rng(seed);
  const double day_scale = 0.8 + 0.4 * Uniform(rng);
  // Two quiet stretches of 20-40 minutes between 09:00 and 18:00.
  std::vector<std::pair<double, double>> quiet;
  for (int i = 0; i < 2; ++i) {
    double start = 9 + 9 * Uniform(rng);
    quiet.emplace_back(start, start + (20 + 20 * Uniform(rng)) / 60.0);
  }
  auto rate_at = [&](double t) {
    double h = std::fmod(t / 3600.0, 24.0);
    double r = DiurnalRate(h, day_scale);
    for (auto [a, b] : quiet) {
      if (h >= a && h < b) r *= 0.1;
    }
    return r;
  };
  const double end = hours * 3600;
  const double peak = 6.0;  // above every rate_at: thinning's envelope
  DemandTrace out;
  // Steady claims: a Poisson process thinned to the diurnal rate.
  for (double t = Exponential(rng, peak); t < end; t += Exponential(rng, peak)) {
    if (Uniform(rng) * peak < rate_at(t)) out.push_back(static_cast<int64_t>(t * 1000));
  }
  // Fan-out bursts: on average one every 4 minutes at the busiest hour, in proportion to the
  // traffic; 10 to ~300 sandboxes (log-normal around 40) within two seconds.
  const double burst_peak = 1.0 / 240.0;
  for (double t = Exponential(rng, burst_peak); t < end; t += Exponential(rng, burst_peak)) {
    if (Uniform(rng) * peak >= rate_at(t)) continue;
    double u1 = std::max(1e-12, Uniform(rng)), u2 = Uniform(rng);
    double normal = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
    int size = std::clamp(static_cast<int>(std::exp(std::log(40.0) + 0.7 * normal)), 10, 300);
    for (int i = 0; i < size; ++i) {
      out.push_back(static_cast<int64_t>((t + 2.0 * Uniform(rng)) * 1000));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<DemandTrace> ReadTraceFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(fmt::format("cannot open trace {}", path));
  DemandTrace out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::string_view v = base::TrimSpace(std::string_view(line).substr(0, line.find('#')));
    if (v.empty()) continue;
    char* parse_end = nullptr;
    std::string s(v);
    double seconds = std::strtod(s.c_str(), &parse_end);
    if (parse_end != s.c_str() + s.size() || !std::isfinite(seconds)) {
      return InvalidArgumentError(fmt::format("{}:{}: not a time in seconds: \"{}\"", path, n, s));
    }
    out.push_back(static_cast<int64_t>(seconds * 1000));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace warren::bench
