#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::image {

// An image name as users write it: "base", "busybox:1.36", "registry:5000/team/app:v2". The
// tag defaults to "latest", so "base" and "base:latest" are one image. A value type.
struct ImageRef {
  std::string repository;  // "base", "registry:5000/team/app"
  std::string tag;         // "latest"

  std::string ToString() const { return repository + ":" + tag; }
  friend bool operator==(const ImageRef&, const ImageRef&) = default;
};

// Parses and normalises a name. Repository components are lowercase letters, digits and
// '.', '_', '-' (the first may be a registry host with a port); a tag is
// [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}. Digest references ("name@sha256:...") are not names and
// are rejected. Errors are InvalidArgument naming the text.
Result<ImageRef> ParseImageRef(std::string_view text);

}  // namespace warren::image
