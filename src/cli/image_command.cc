// `warren image import|pull|ls|rm`: thin wrappers over image/commands.h. They open the node's
// image store directly (it is shared safely between processes: the node agent of a running
// server may hold it at the same time), so they work with or without a server.

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "cli/app.h"
#include "image/commands.h"
#include "image/image_store.h"
#include "image/pull_meter.h"

namespace warren::cli {
namespace {

struct ImageFlags {
  std::string root;
  std::string path;
  std::string reference;
  std::string name;
  std::vector<std::string> names;
  std::string allowed_registries;
};

// --root, else $WARREN_IMAGE_ROOT (what the node agent reads too), else the default root.
std::string ImageRoot(const ImageFlags& f) {
  if (!f.root.empty()) return f.root;
  if (const char* env = std::getenv("WARREN_IMAGE_ROOT"); env && *env) return env;
  return image::ImageStoreOptions{}.root;
}

Result<std::unique_ptr<image::ImageStore>> OpenStore(
    const ImageFlags& f, image::RegistryAllowlist allowed = image::RegistryAllowlist()) {
  image::ImageStoreOptions options;
  options.root = ImageRoot(f);
  options.allowed_registries = std::move(allowed);
  auto store = image::ImageStore::Open(options);
  if (!store.ok()) {
    return store.status().WithPrefix("cannot open the image store at " + options.root);
  }
  return store;
}

void PrintOrFail(App& app, const Result<image::Table>& table) {
  if (!table.ok()) return app.Fail(table.status());
  app.out() << image::FormatTable(*table);
}

}  // namespace

void AddImageCommand(App& app) {
  auto flags = std::make_shared<ImageFlags>();
  auto* cmd = app.cli().add_subcommand("image", "Manage the node's images (import, pull, ls, rm)");
  cmd->add_option("--root", flags->root,
                  "the image store's directory (default: $WARREN_IMAGE_ROOT, else " +
                      image::ImageStoreOptions{}.root + ")");
  cmd->require_subcommand(1);

  auto* import = cmd->add_subcommand(
      "import",
      "Import an OCI image layout directory or a tarball of one: warren image import "
      "PATH [--name NAME]");
  import->add_option("path", flags->path, "the layout directory or .tar archive")->required();
  import->add_option("--name", flags->name, "the image's name (default: the layout's ref name)");
  import->callback([&app, flags] {
    auto store = OpenStore(*flags);
  if (!store.ok()) return app.Fail(store.status());
  PrintOrFail(app, image::ImportImageCommand(**store, flags->path, flags->name));
});

auto* pull = cmd->add_subcommand("pull",
                                 "Pull an image from a registry over plain HTTP: warren image pull "
                                 "HOST:PORT/REPO:TAG [--name NAME]");
pull->add_option("reference", flags->reference, "HOST:PORT/REPOSITORY:TAG")->required();
pull->add_option("--name", flags->name, "the local name (default: the reference)");
pull->add_option("--allowed-registries", flags->allowed_registries,
                 "hosts the pull and its redirects may connect to: comma-separated host, "
                 "host:port or *.domain (default: the reference's registry only)");
pull->callback([&app, flags] {
  // The operator names the registry on the command line, so it is allowed; redirects (to a
  // registry's storage) only within it, unless the flag lists more.
  size_t slash = flags->reference.find('/');
  std::string registry = slash == std::string::npos ? "" : flags->reference.substr(0, slash);
  auto allowed = image::RegistryAllowlist::Parse(
      flags->allowed_registries.empty() ? registry : flags->allowed_registries);
  if (!allowed.ok()) return app.Fail(allowed.status());
  auto store = OpenStore(*flags, std::move(allowed).value());
  if (!store.ok()) return app.Fail(store.status());
  // Progress on stderr, so stdout stays the table a script may parse: a line for each layer
  // that finished and, on a terminal, a bar redrawn below them.
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  image::PullMeter meter;
  auto drawn = std::chrono::steady_clock::time_point{};
  auto result = image::PullImageCommand(
      **store, flags->reference, flags->name, [&](const image::PullProgress& p) {
        meter.Add(p);
        std::string line = image::PullProgressText(p);
        auto now = std::chrono::steady_clock::now();
        if (line.empty() && (!terminal || now - drawn < std::chrono::milliseconds(100))) return;
        drawn = now;
        if (terminal) app.err() << "\r\033[K";
        app.err() << line;
        if (terminal) app.err() << meter.Bar();
        app.err().flush();
      });
  if (terminal) app.err() << "\r\033[K";
  if (result.ok()) app.err() << meter.Bar() << "\n";
  PrintOrFail(app, std::move(result));
});

auto* ls = cmd->add_subcommand("ls", "List the images");
ls->alias("list");
ls->callback([&app, flags] {
  auto store = OpenStore(*flags);
  if (!store.ok()) return app.Fail(store.status());
  app.out() << image::FormatTable(image::ListImagesCommand(**store));
});

auto* rm = cmd->add_subcommand(
    "rm", "Remove images and the layers nothing else uses: warren image rm NAME...");
rm->alias("remove");
rm->add_option("names", flags->names, "image names")->required();
rm->callback([&app, flags] {
  auto store = OpenStore(*flags);
  if (!store.ok()) return app.Fail(store.status());
  PrintOrFail(app, image::RemoveImagesCommand(**store, flags->names));
});
}  // namespace warren::cli

}  // namespace warren::cli
