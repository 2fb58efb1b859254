#include "server/metrics.h"

#include <cmath>
#include <cstdio>

#include "util/error.h"

namespace hfstatic::server {

namespace {

bool valid_name(const std::string& s, bool colon) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

const char* type_name(MetricsRegistry::Type t) {
  switch (t) {
    case MetricsRegistry::Type::Counter: return "counter";
    case MetricsRegistry::Type::Gauge: return "gauge";
    default: return "histogram";
  }
}

// s with backslashes and line feeds escaped, and double quotes too when `quotes` (label values).
std::string escape(const std::string& s, bool quotes) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quotes)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

std::string escape_help(const std::string& s) { return escape(s, false); }

// {a="x",b="y"} with `extra` (le="...") last; empty when there are no labels at all.
std::string label_set(const std::vector<std::string>& names, const MetricsRegistry::Labels& values,
                      const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (out.empty() ? "" : ",") + names[i] + "=\"" + metric_label_value(values[i]) + "\"";
  if (!extra.empty()) out += (out.empty() ? "" : ",") + extra;
  return out.empty() ? out : "{" + out + "}";
}

}  // namespace

std::string metric_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string metric_label_value(const std::string& v) { return escape(v, true); }

void MetricsRegistry::declare(Family family) {
  if (!valid_name(family.name, true)) fail("metric name '", family.name, "' is not a Prometheus name");
  for (const auto& l : family.label_names)
    if (!valid_name(l, false) || l == "le") fail("label name '", l, "' of ", family.name, " is not allowed");
  for (size_t i = 1; i < family.bounds.size(); ++i)
    if (!(family.bounds[i] > family.bounds[i - 1])) fail("the buckets of ", family.name, " do not increase");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& f : families_)
    if (f.name == family.name) fail("metric ", family.name, " is declared twice");
  families_.push_back(std::move(family));
}

void MetricsRegistry::counter(const std::string& name, const std::string& help, std::vector<std::string> label_names) {
  declare({name, help, Type::Counter, std::move(label_names), {}, {}});
}

void MetricsRegistry::gauge(const std::string& name, const std::string& help, std::vector<std::string> label_names) {
  declare({name, help, Type::Gauge, std::move(label_names), {}, {}});
}

void MetricsRegistry::histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                                std::vector<std::string> label_names) {
  if (bounds.empty()) fail("histogram ", name, " has no buckets");
  declare({name, help, Type::Histogram, std::move(label_names), std::move(bounds), {}});
}

MetricsRegistry::Series& MetricsRegistry::series(const std::string& name, Type type, const Labels& labels) {
  for (auto& f : families_) {
    if (f.name != name) continue;
    if (f.type != type) fail("metric ", name, " is a ", type_name(f.type), ", not a ", type_name(type));
    if (labels.size() != f.label_names.size())
      fail("metric ", name, " takes ", f.label_names.size(), " label values, got ", labels.size());
    Series& s = f.series[labels];
    if (type == Type::Histogram && s.buckets.empty()) s.buckets.assign(f.bounds.size(), 0);
    return s;
  }
  fail("metric ", name, " is not declared");
}

void MetricsRegistry::add(const std::string& name, double by, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  bool counter = false;
  for (const auto& f : families_)
    if (f.name == name) counter = f.type == Type::Counter;
  if (counter && by < 0) fail("counter ", name, " cannot decrease (add ", by, ")");
  series(name, counter ? Type::Counter : Type::Gauge, labels).value += by;
}

void MetricsRegistry::set(const std::string& name, double value, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  series(name, Type::Gauge, labels).value = value;
}

void MetricsRegistry::observe(const std::string& name, double value, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  Series& s = series(name, Type::Histogram, labels);
  for (const auto& f : families_) {
    if (f.name != name) continue;
    for (size_t i = 0; i < f.bounds.size(); ++i)
      if (value <= f.bounds[i]) {
        ++s.buckets[i];
        break;
      }
  }
  s.value += value;
  ++s.count;
}

double MetricsRegistry::value(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& f : families_) {
    if (f.name != name) continue;
    auto it = f.series.find(labels);
    return it == f.series.end() ? 0 : it->second.value;
  }
  fail("metric ", name, " is not declared");
}

std::string MetricsRegistry::text() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const auto& f : families_) {
    out += "# HELP " + f.name + " " + escape_help(f.help) + "\n";
    out += "# TYPE " + f.name + " " + type_name(f.type) + "\n";
    // A family without labels shows its one series even before the first update.
    if (f.series.empty() && f.label_names.empty()) {
      if (f.type != Type::Histogram) {
        out += f.name + " 0\n";
      } else {
        for (double b : f.bounds) out += f.name + "_bucket{le=\"" + metric_number(b) + "\"} 0\n";
        out += f.name + "_bucket{le=\"+Inf\"} 0\n" + f.name + "_sum 0\n" + f.name + "_count 0\n";
      }
    }
    for (const auto& [labels, s] : f.series) {
      if (f.type != Type::Histogram) {
        out += f.name + label_set(f.label_names, labels) + " " + metric_number(s.value) + "\n";
        continue;
      }
      uint64_t cumulative = 0;
      for (size_t i = 0; i < f.bounds.size(); ++i) {
        cumulative += s.buckets[i];
        out += f.name + "_bucket" + label_set(f.label_names, labels, "le=\"" + metric_number(f.bounds[i]) + "\"") +
               " " + std::to_string(cumulative) + "\n";
      }
      out +=
          f.name + "_bucket" + label_set(f.label_names, labels, "le=\"+Inf\"") + " " + std::to_string(s.count) + "\n";
      out += f.name + "_sum" + label_set(f.label_names, labels) + " " + metric_number(s.value) + "\n";
      out += f.name + "_count" + label_set(f.label_names, labels) + " " + std::to_string(s.count) + "\n";
    }
  }
  return out;
}

}  // namespace hfstatic::server
