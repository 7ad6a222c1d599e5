#include "image/pull_meter.h"

#include <fmt/format.h>

#include <algorithm>

#include "image/commands.h"

namespace warren::image {

void PullMeter::Grow(size_t layers) {
  if (size_.size() >= layers) return;
  size_.resize(layers, 0);
  done_.resize(layers, 0);
  finished_.resize(layers, false);
}

void PullMeter::Add(const PullProgress& p) {
  if (p.layer == 0) return;
  Grow(std::max(p.layers, p.layer));
  size_t i = p.layer - 1;
  size_[i] = std::max<int64_t>(0, p.bytes);
  using Step = PullProgress::Step;
  switch (p.step) {
    case Step::kLayerPresent:
    case Step::kLayerUnpacked:
      done_[i] = size_[i];
      finished_[i] = true;
      break;
    case Step::kLayerDownloaded:
    case Step::kUnpacking:
      done_[i] = size_[i];
      break;
    case Step::kLayerBytes:
      done_[i] = std::clamp<int64_t>(p.done, 0, size_[i]);
      break;
    case Step::kLayerDownloading:
      done_[i] = 0;
      break;
  }
}

size_t PullMeter::layers_done() const {
  return static_cast<size_t>(std::count(finished_.begin(), finished_.end(), true));
}

int64_t PullMeter::bytes_total() const {
  int64_t n = 0;
  for (int64_t s : size_) n += s;
  return n;
}

int64_t PullMeter::bytes_done() const {
  int64_t n = 0;
  for (int64_t d : done_) n += d;
  return n;
}

int PullMeter::percent() const {
  if (!size_.empty() && layers_done() == layers()) return 100;
  int64_t total = bytes_total();
  if (total <= 0) return 0;
  return static_cast<int>(std::min<int64_t>(99, bytes_done() * 100 / total));
}

std::string PullMeter::Bar(size_t width) const {
  size_t filled = width * static_cast<size_t>(percent()) / 100;
  return fmt::format("[{}{}] {:>3}% {}/{}, {}/{} layers", std::string(filled, '#'),
                     std::string(width - filled, '.'), percent(),
                     HumanSize(static_cast<uint64_t>(bytes_done())),
                     HumanSize(static_cast<uint64_t>(bytes_total())), layers_done(), layers());
}

}  // namespace warren::image
