#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "image/image_store.h"

// The JSON form of the store's on-disk records. Records are written by the store itself but read
// back as untrusted (a damaged file must give an error, not a crash). Free functions; thread-safe.

namespace warren::image {

std::string ImageRecordToJson(const ImageRecord& record);
Result<ImageRecord> ImageRecordFromJson(std::string_view json, std::string_view what);

// LayerRecord::dir is not stored (it follows from the root); the caller fills it in.
std::string LayerRecordToJson(const LayerRecord& record);
Result<LayerRecord> LayerRecordFromJson(std::string_view json, std::string_view what);

std::string LeaseToJson(const Lease& lease);
Result<Lease> LeaseFromJson(std::string_view json, std::string_view what);

}  // namespace warren::image
