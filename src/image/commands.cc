#include "image/commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace warren::image {

std::string HumanSize(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1000 && unit + 1 < std::size(kUnits)) {
    v /= 1000;
    ++unit;
  }
  if (unit == 0) return fmt::format("{}B", bytes);
  return fmt::format("{:.3g}{}", v, kUnits[unit]);
}

std::string FormatTable(const Table& table) {
  std::vector<size_t> widths(table.header.size(), 0);
  auto measure = [&](const Row& row) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  };
  measure(table.header);
  for (const auto& row : table.rows) measure(row);
  std::string out;
  auto print = [&](const Row& row) {
    std::string line;
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 3, ' ');
    }
    out += line + "\n";
  };
  print(table.header);
  for (const auto& row : table.rows) print(row);
  return out;
}

namespace {

// What import and pull print: the one image they stored.
Table ImportedTable(const ImageRecord& record) {
  Table table{{"NAME", "DIGEST", "LAYERS", "SIZE"}, {}};
  table.rows.push_back({record.name, record.manifest_digest.Short(),
                        std::to_string(record.layers.size()),
                        HumanSize(static_cast<uint64_t>(record.compressed_size))});
  return table;
}

}  // namespace

Result<Table> ImportImageCommand(ImageStore& store, const std::string& path,
                                 const std::string& name) {
  ImportOptions options;
  options.name = name;
  ASSIGN_OR_RETURN(ImageRecord record, store.Import(path, options));
  return ImportedTable(record);
}

Result<Table> PullImageCommand(ImageStore& store, const std::string& reference,
                               const std::string& name,
                               std::function<void(const PullProgress&)> progress) {
  ImportOptions options;
  options.name = name;
  options.on_pull_progress = std::move(progress);
  ASSIGN_OR_RETURN(ImageRecord record, store.Pull(reference, options));
  return ImportedTable(record);
}

std::string PullProgressText(const PullProgress& p) {
  using Step = PullProgress::Step;
  std::string head = fmt::format("layer {}/{} {} {}: ", p.layer, p.layers, p.digest.Short(),
                                 HumanSize(static_cast<uint64_t>(std::max<int64_t>(0, p.bytes))));
  switch (p.step) {
    case Step::kLayerPresent:
      return head + "already here\n";
    case Step::kLayerDownloaded:
      return head +
             fmt::format("downloaded in {:.1f}s\n", static_cast<double>(p.took.count()) / 1000.0);
    case Step::kLayerUnpacked:
      return head + "unpacked\n";
    case Step::kLayerDownloading:
    case Step::kLayerBytes:
    case Step::kUnpacking:
      return "";  // The lines say what finished; a bar (PullMeter) shows what is under way.
  }
  return "";
}

Table ListImagesCommand(const ImageStore& store) {
  std::map<Digest, uint64_t> unpacked;
  for (const auto& layer : store.ListLayers()) unpacked[layer.digest] = layer.unpacked_bytes;
  Table table{{"NAME", "DIGEST", "LAYERS", "SIZE", "UNPACKED", "IMPORTED"}, {}};
  for (const auto& image : store.List()) {
    uint64_t bytes = 0;
    for (const auto& d : image.layers) bytes += unpacked[d];
    table.rows.push_back({image.name, image.manifest_digest.Short(),
                          std::to_string(image.layers.size()),
                          HumanSize(static_cast<uint64_t>(image.compressed_size)), HumanSize(bytes),
                          image.imported_at});
  }
  return table;
}

Result<Table> RemoveImagesCommand(ImageStore& store, const std::vector<std::string>& names) {
  Table table{{"NAME", "RESULT"}, {}};
  Status first_failure;
  size_t layers = 0;
  uint64_t freed = 0;
  for (const auto& name : names) {
    auto report = store.Remove(name);
    if (report.ok()) {
      table.rows.push_back({name, "removed"});
      layers += report->removed_layers.size();
      freed += report->freed_bytes;
    } else {
      table.rows.push_back({name, report.status().message()});
      if (first_failure.ok()) first_failure = report.status();
    }
  }
  table.rows.push_back({"(gc)", fmt::format("{} layers, {} freed", layers, HumanSize(freed))});
  if (!first_failure.ok()) {
    return Status(first_failure.code(), "not every image was removed:\n" + FormatTable(table));
  }
  return table;
}

}  // namespace warren::image
