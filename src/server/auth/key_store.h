#pragma once

#include <sys/stat.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/principal.h"
#include "base/result.h"

namespace warren::server::auth {

// One API key as stored: never the key itself, only its peppered hash.
struct ApiKeyRecord {
  std::string id;    // 16 hex characters, what `warren apikey rm` takes
  std::string name;  // unique
  std::string team;  // the namespace its sandboxes live in
  bool admin = false;
  std::string hash;  // HashApiKey(pepper, key)
  std::string mask;  // MaskApiKey(key)
  base::WallTime created_at{};
};

// Who a request is: the key it presented (base/principal.h, so that HTTP requests can carry it).
using Principal = base::Principal;

struct NewKeyOptions {
  std::string team;  // an RFC 1123 label (it names a namespace)
  std::string name;  // empty → "<team>-<id>"
  bool admin = false;
};

struct CreatedKey {
  ApiKeyRecord record;
  std::string key;  // shown once; only its hash is kept
};

// The API keys of one install, in a directory of their own (`<data_dir>/auth`, mode 0700):
//   pepper     32 random bytes (hex), made once per install, mode 0600
//   keys.json  the records, replaced atomically on every change, mode 0600
//   lock       flock(2) held by whichever process changes keys.json
// Several processes may use the directory at once (`warren server` and `warren apikey
// bootstrap` run by run.sh before it): writers serialize on the lock and re-read the file under
// it; readers notice a replaced file (inode, size, mtime) and reload it before answering.
//
// Thread-safe. Errors: InvalidArgument (bad team or name), AlreadyExists (name taken),
// NotFound (unknown key id or name), FailedPrecondition (removing the last admin key),
// Unauthenticated (a key that is missing, malformed or unknown), Internal/PermissionDenied for
// file trouble (naming the file).
class KeyStore {
 public:
  // Creates the directory and the pepper when missing.
  static Result<std::unique_ptr<KeyStore>> Open(std::string dir,
                                                base::Clock& clock = base::RealClock());
  ~KeyStore();

  const std::string& dir() const { return dir_; }

  Result<CreatedKey> Create(const NewKeyOptions& options);
  // Every key, oldest first.
  Result<std::vector<ApiKeyRecord>> List();
  // By id or by name. The last admin key cannot be removed (nobody could manage keys then).
  Status Remove(std::string_view id_or_name);
  Result<bool> HasAdminKey();

  // The principal for the key a request presented.
  Result<Principal> Authenticate(std::string_view key);

 private:
  KeyStore(std::string dir, std::string pepper, base::Clock& clock);
  struct FileId {
    ino_t ino = 0;
    off_t size = -1;
    int64_t mtime_ns = 0;
    bool operator==(const FileId&) const = default;
  };
  // Reloads keys.json when it changed since it was last read. Under mu_.
  Status RefreshLocked();
  void InstallLocked(std::vector<ApiKeyRecord> records);
  // Runs `change` on the freshest records under the inter-process lock, then writes them.
  Status Mutate(const std::function<Status(std::vector<ApiKeyRecord>&)>& change);

  const std::string dir_;
  const std::string pepper_;
  base::Clock& clock_;

  std::mutex mu_;
  FileId loaded_;                                    // guarded by mu_
  std::vector<ApiKeyRecord> records_;                // guarded by mu_
  std::unordered_map<std::string, size_t> by_hash_;  // guarded by mu_
};

}  // namespace warren::server::auth
