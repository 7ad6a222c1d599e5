// What the etcd backend parses: store URLs (an operator's flag) and keys read back from etcd
// (a watch on the whole prefix sees every key under it, whoever wrote it). An object key that
// parses must be the key the layout makes for what it parsed to.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/kinds.h"
#include "store/etcd/keys.h"
#include "store/etcd_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warren;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  store::ParseEtcdUrl(text).status().IgnoreError();
  static const store::etcd::Keys keys("/warren", api::BuiltinKinds());
  if (auto parsed = keys.Parse(text)) {
    if (keys.Object(*parsed->kind, parsed->namespace_, parsed->name) != text) std::abort();
  }
  if (auto dependent = keys.DependentOf(text)) keys.Parse(*dependent);
  return 0;
}
