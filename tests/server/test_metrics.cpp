// The Prometheus registry: its text parses as the exposition format (a strict parser here), with
// cumulative histogram buckets, escaped label values and the errors of misuse.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

#include "server/metrics.h"
#include "test_support.h"
#include "util/error.h"

namespace hfstatic::server {
namespace {

// A parsed exposition: each sample "name{labels}" (as written) with its value, and each
// family's type. Fails the test on a line the format does not allow.
struct Exposition {
  std::map<std::string, std::string> types;
  std::map<std::string, double> samples;
};

Exposition parse(const std::string& text) {
  Exposition e;
  static const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*)");
  static const std::regex type(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
  static const std::regex sample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*")(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*")*\})? ([-+]?([0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|Inf)|NaN))");
  std::istringstream in(text);
  std::string line, family;
  EXPECT_TRUE(!text.empty() && text.back() == '\n');
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, help)) continue;
    if (std::regex_match(line, m, type)) {
      EXPECT_EQ(e.types.count(m[1]), 0u) << "TYPE twice: " << line;
      e.types[m[1]] = m[2];
      family = m[1];
      continue;
    }
    if (!std::regex_match(line, m, sample)) {
      ADD_FAILURE() << "not a sample line: '" << line << "'";
      continue;
    }
    const std::string name = m[1];
    // A sample belongs to the family its TYPE line opened (histograms: _bucket, _sum, _count).
    const bool ok =
        name == family || (e.types[family] == "histogram" &&
                           (name == family + "_bucket" || name == family + "_sum" || name == family + "_count"));
    EXPECT_TRUE(ok) << name << " outside its family " << family;
    const std::string value = line.substr(line.rfind(' ') + 1);
    const std::string key = line.substr(0, line.rfind(' '));
    EXPECT_EQ(e.samples.count(key), 0u) << "sample twice: " << key;
    e.samples[key] = value == "+Inf" ? INFINITY : value == "-Inf" ? -INFINITY : std::stod(value);
  }
  return e;
}

TEST(Metrics, TextParsesAsTheExpositionFormat) {
  MetricsRegistry r;
  r.counter("requests_total", "Requests answered, by route and status.", {"route", "status"});
  r.gauge("slots_busy", "Slots generating.");
  r.histogram("ttft_seconds", "Time to the first token.", {0.01, 0.1, 1});
  r.counter("idle_total", "Never updated.");
  r.add("requests_total", 1, {"/v1/completions", "200"});
  r.add("requests_total", 2, {"/v1/completions", "200"});
  r.add("requests_total", 1, {"weird \"route\"\\\n", "404"});
  r.set("slots_busy", 3);
  r.add("slots_busy", -1);
  for (double v : {0.005, 0.05, 0.05, 0.5, 7.0}) r.observe("ttft_seconds", v);

  const std::string text = r.text();
  const Exposition e = parse(text);
  EXPECT_EQ(e.types.at("requests_total"), "counter");
  EXPECT_EQ(e.types.at("slots_busy"), "gauge");
  EXPECT_EQ(e.types.at("ttft_seconds"), "histogram");
  EXPECT_EQ(e.samples.at(R"(requests_total{route="/v1/completions",status="200"})"), 3);
  EXPECT_EQ(e.samples.at(R"(requests_total{route="weird \"route\"\\\n",status="404"})"), 1);
  EXPECT_EQ(e.samples.at("slots_busy"), 2);
  EXPECT_EQ(e.samples.at("idle_total"), 0);
  // Buckets are cumulative; +Inf is the count.
  EXPECT_EQ(e.samples.at(R"(ttft_seconds_bucket{le="0.01"})"), 1);
  EXPECT_EQ(e.samples.at(R"(ttft_seconds_bucket{le="0.1"})"), 3);
  EXPECT_EQ(e.samples.at(R"(ttft_seconds_bucket{le="1"})"), 4);
  EXPECT_EQ(e.samples.at(R"(ttft_seconds_bucket{le="+Inf"})"), 5);
  EXPECT_EQ(e.samples.at("ttft_seconds_count"), 5);
  EXPECT_NEAR(e.samples.at("ttft_seconds_sum"), 7.605, 1e-9);
  EXPECT_EQ(r.value("requests_total", {"/v1/completions", "200"}), 3);
}

TEST(Metrics, NumbersAsTheFormatWritesThem) {
  EXPECT_EQ(metric_number(3), "3");
  EXPECT_EQ(metric_number(0.25), "0.25");
  EXPECT_EQ(metric_number(INFINITY), "+Inf");
  EXPECT_EQ(metric_number(-INFINITY), "-Inf");
  EXPECT_EQ(metric_number(NAN), "NaN");
  EXPECT_EQ(metric_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(Metrics, MisuseIsAnError) {
  MetricsRegistry r;
  r.counter("c_total", "c", {"a"});
  r.gauge("g", "g");
  EXPECT_THROW(r.counter("c_total", "again"), Error);
  EXPECT_THROW(r.gauge("bad-name", "x"), Error);
  EXPECT_THROW(r.gauge("x", "x", {"le"}), Error);
  EXPECT_THROW(r.histogram("h", "h", {1, 1}), Error);
  EXPECT_THROW(r.add("c_total", 1), Error);          // missing label value
  EXPECT_THROW(r.add("c_total", -1, {"x"}), Error);  // counters only go up
  EXPECT_THROW(r.observe("g", 1), Error);            // not a histogram
  EXPECT_THROW(r.set("nothing", 1), Error);          // not declared
  EXPECT_NE(test::error_of([&] { r.add("c_total", 1); }).find("takes 1 label values"), std::string::npos);
}

}  // namespace
}  // namespace hfstatic::server
