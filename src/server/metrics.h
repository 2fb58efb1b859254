// A small Prometheus registry: counters, gauges and histograms of fixed buckets, each a family of
// series told apart by label values, rendered in the text exposition format (version 0.0.4).
// Thread-safe; a family is declared once, then its series are updated by label values.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace hfstatic::server {

class MetricsRegistry {
 public:
  enum class Type { Counter, Gauge, Histogram };
  using Labels = std::vector<std::string>;  // values, in the order of the family's label names

  // Declares a family (throws Error for a bad name, a name declared twice, or histogram bounds
  // that are not increasing). Names: [a-zA-Z_:][a-zA-Z0-9_:]*; label names without the colon.
  void counter(const std::string& name, const std::string& help, std::vector<std::string> label_names = {});
  void gauge(const std::string& name, const std::string& help, std::vector<std::string> label_names = {});
  void histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                 std::vector<std::string> label_names = {});

  // Updates a series (created at its first update). Throws Error for an undeclared family, one
  // of another type, a wrong number of label values or a negative counter increment.
  void add(const std::string& name, double by = 1, const Labels& labels = {});
  void set(const std::string& name, double value, const Labels& labels = {});
  void observe(const std::string& name, double value, const Labels& labels = {});

  // The value of a counter or gauge series (0 when it has none yet), for tests and /health.
  double value(const std::string& name, const Labels& labels = {}) const;
  // Every family in the order declared, series in the order of their label values.
  std::string text() const;

 private:
  struct Series {
    double value = 0;               // counter, gauge; the sum of a histogram
    std::vector<uint64_t> buckets;  // histogram: observations <= each bound (not cumulative)
    uint64_t count = 0;             // histogram
  };
  struct Family {
    std::string name, help;
    Type type;
    std::vector<std::string> label_names;
    std::vector<double> bounds;
    std::map<Labels, Series> series;
  };
  void declare(Family family);
  Series& series(const std::string& name, Type type, const Labels& labels);

  mutable std::mutex mutex_;
  std::vector<Family> families_;
};

// A sample value as the text format writes it: integers without a fraction, +Inf, -Inf, NaN.
std::string metric_number(double v);
// A label value with backslash, double quote and newline escaped.
std::string metric_label_value(const std::string& v);

}  // namespace hfstatic::server
