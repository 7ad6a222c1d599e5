#include "envd/gzip_probe.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace warren::envd {
namespace {

// Incompressible bytes from a fixed seed, so the test is the same on every run.
std::string RandomBytes(size_t n, uint32_t seed = 42) {
  std::mt19937 gen(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(gen() & 0xff);
  return out;
}

std::string Text(size_t n) {
  std::string out;
  for (int i = 0; out.size() < n; ++i) out += "line " + std::to_string(i) + " of a log file\n";
  out.resize(n);
  return out;
}

TEST(GzipPays, TextYesRandomBytesNo) {
  EXPECT_TRUE(GzipPays(Text(kGzipProbeBytes), 100 << 20));
  EXPECT_FALSE(GzipPays(RandomBytes(kGzipProbeBytes), 100 << 20));
  // A file smaller than the probe is judged on all of it.
  EXPECT_TRUE(GzipPays(Text(5000), 5000));
  EXPECT_FALSE(GzipPays(RandomBytes(5000), 5000));
}

TEST(GzipPays, TheLineIsNinetyPercent) {
  // Random bytes followed by zeros shrink to about the random share: 80 % pays, 95 % does not.
  std::string mostly_random = RandomBytes(kGzipProbeBytes * 95 / 100);
  mostly_random.resize(kGzipProbeBytes, '\0');
  EXPECT_FALSE(GzipPays(mostly_random, kGzipProbeBytes));
  std::string four_fifths = RandomBytes(kGzipProbeBytes * 80 / 100);
  four_fifths.resize(kGzipProbeBytes, '\0');
  EXPECT_TRUE(GzipPays(four_fifths, kGzipProbeBytes));
}

TEST(GzipPays, SmallFilesAndEmptyHeadsStayIdentity) {
  const std::string zeros(kGzipMinFileBytes, '\0');
  EXPECT_TRUE(GzipPays(zeros, kGzipMinFileBytes));
  EXPECT_FALSE(GzipPays(std::string_view(zeros).substr(1), kGzipMinFileBytes - 1));
  EXPECT_FALSE(GzipPays("", 0));
  EXPECT_FALSE(GzipPays("", 1 << 20));  // the file shrank to nothing before the probe
}

TEST(GzipPays, LooksAtTheFirstWindowOnly) {
  // Whatever follows the first kGzipProbeBytes does not count: the probe reads no further.
  std::string head = RandomBytes(kGzipProbeBytes) + std::string(10 * kGzipProbeBytes, 'a');
  EXPECT_FALSE(GzipPays(head, head.size()));
  head = Text(kGzipProbeBytes) + RandomBytes(10 * kGzipProbeBytes);
  EXPECT_TRUE(GzipPays(head, head.size()));
}

}  // namespace
}  // namespace warren::envd
