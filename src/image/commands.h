#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "image/image_store.h"

// What the `warren image import|ls|rm` verbs do, as plain functions over an ImageStore that
// return printable rows: the CLI verb only parses flags, calls one of these and prints the
// table. Thread-safe as the store is.

namespace warren::image {

// One line of a table: the cells, in the order of the matching header.
using Row = std::vector<std::string>;

struct Table {
  Row header;
  std::vector<Row> rows;
};

// Renders a table with left-aligned columns separated by three spaces (as kubectl and docker
// print), header included, each line ending in '\n'.
std::string FormatTable(const Table& table);

// Human sizes as docker prints them: "999B", "1.5kB", "63.7MB" (powers of 1000).
std::string HumanSize(uint64_t bytes);

// `warren image import PATH [--name NAME]`: imports one layout or archive.
// Columns: NAME, DIGEST (manifest, 12 hex), LAYERS, SIZE (compressed).
Result<Table> ImportImageCommand(ImageStore& store, const std::string& path,
                                 const std::string& name);

// `warren image pull HOST:PORT/REPO:TAG [--name NAME]`: pulls over plain HTTP and imports,
// telling `progress` (may be empty) of each layer. Columns as for import.
Result<Table> PullImageCommand(ImageStore& store, const std::string& reference,
                               const std::string& name,
                               std::function<void(const PullProgress&)> progress = {});

// One line of `warren image pull`'s progress: "layer 2/3 9f8e7d6c5b4a 63.7MB: downloading..."
// (no newline: " done in 1.2s\n" follows), ": already here\n", or "unpacking...\n".
std::string PullProgressText(const PullProgress& progress);

// `warren image ls`: every image. Columns: NAME, DIGEST, LAYERS, SIZE, UNPACKED, IMPORTED.
Table ListImagesCommand(const ImageStore& store);

// `warren image rm NAME...`: removes each image and collects what nothing holds. Columns:
// NAME, RESULT ("removed" or the error); a summary row "(gc)" reports freed layers and bytes.
// Fails (with the table of what happened in the message) when any name could not be removed.
Result<Table> RemoveImagesCommand(ImageStore& store, const std::vector<std::string>& names);

}  // namespace warren::image
