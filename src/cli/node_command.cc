#include "cli/node_command.h"

#include <fmt/format.h>
#include <signal.h>

#include "base/log.h"
#include "base/small_file.h"
#include "image/registry_allowlist.h"
#include "node/node_process.h"
#include "os/rlimit.h"
#include "sbnet/sandbox_network.h"

namespace warren::cli {
namespace {

struct NodeFlags {
  std::string store;
  std::string key_dir;
  std::string name;
  std::string data_dir = "/var/lib/warren-node";
  std::string address = "127.0.0.1";
  int port = 7790;
  std::string advertise;
  std::string port_file;
  std::string log_level = "info";
  int heartbeat_ms = 1000;
  std::string allowed_registries;
  std::string sandbox_network = "none";
  std::string sandbox_dns = "8.8.8.8";
  std::string sandbox_open;
};

void RunNode(App& app, const NodeFlags& f) {
  base::SetLogLevel(f.log_level);
  if (f.port < 0 || f.port > 65535) {
    return app.Fail(InvalidArgumentError(fmt::format("--port {} is out of range", f.port)));
  }
  if (f.heartbeat_ms <= 0) {
    return app.Fail(InvalidArgumentError(fmt::format(
        "--heartbeat-interval must be a positive number of milliseconds, got {}", f.heartbeat_ms)));
  }
  node::NodeProcessOptions options;
  options.store_url = f.store;
  options.data_dir = f.data_dir;
  options.key_dir = f.key_dir.empty() ? f.data_dir + "/auth" : f.key_dir;
  options.address = f.address;
  options.port = static_cast<uint16_t>(f.port);
  options.advertise_address = f.advertise;
  options.heartbeat_interval = std::chrono::milliseconds(f.heartbeat_ms);
  options.agent = node::NodeAgentOptions::ForDataDir(f.data_dir);
  if (!f.name.empty()) options.agent.node_name = f.name;
  auto registries = image::RegistryAllowlist::Parse(f.allowed_registries);
  if (!registries.ok()) return app.Fail(registries.status().WithPrefix("--allowed-registries"));
  options.agent.allowed_registries = std::move(registries).value();
  auto network = sbnet::ParseNetworkFlags(f.sandbox_network, f.sandbox_dns, f.sandbox_open);
  if (!network.ok()) return app.Fail(network.status());
  options.agent.network = std::move(network).value();
  if (auto nofile = os::RaiseOpenFileLimit(); !nofile.ok()) {
    base::Logger("node")->warn("open file limit not raised: {}", nofile.status().ToString());
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto process = node::NodeProcess::Create(std::move(options));
  if (!process.ok()) return app.Fail(process.status());
  if (Status s = (*process)->Start(); !s.ok()) return app.Fail(s);
  if (!f.port_file.empty()) {
    Status s = base::WriteFileAtomically(f.port_file, fmt::format("{}\n", (*process)->port()));
    if (!s.ok()) return app.Fail(s);
  }
  int sig = 0;
  sigwait(&signals, &sig);
  base::Logger("node")->info("stopping signal={}", sig);
  (*process)->Stop();
}

}  // namespace

void AddNodeCommand(App& app) {
  auto f = std::make_shared<NodeFlags>();
  auto* cmd = app.cli().add_subcommand(
      "node",
      "Run a node agent as its own process: it registers a Node in the cluster's etcd store, "
      "runs the sandboxes placed on it and serves them to the servers through its relay");
  cmd->add_option("--store", f->store, "the cluster's store: etcd://host:port[,host:port...]")
      ->required();
  cmd->add_option("--key-dir", f->key_dir,
                  "directory holding the cluster's seal.key (copied from a server's key "
                  "directory; default <data-dir>/auth)");
  cmd->add_option("--name", f->name,
                  "the Node's name (default: $WARREN_NODE_NAME, else the "
                  "host name)");
  cmd->add_option("--data-dir", f->data_dir, "the node's own files (sandboxes, logs, audit)")
      ->capture_default_str();
  cmd->add_option("--address", f->address, "address the relay listens on")->capture_default_str();
  cmd->add_option("--port", f->port, "port the relay listens on (0 = any free port)")
      ->capture_default_str();
  cmd->add_option("--advertise", f->advertise,
                  "host:port the servers dial for this node's relay (default: --address and "
                  "the bound port)");
  cmd->add_option("--port-file", f->port_file, "write the relay's bound port to this file");
  cmd->add_option("--log-level", f->log_level, "trace, debug, info, warn, error, off")
      ->capture_default_str();
  cmd->add_option("--heartbeat-interval", f->heartbeat_ms,
                  "milliseconds between renewals of the Node's heartbeat")
      ->capture_default_str();
  cmd->add_option("--allowed-registries", f->allowed_registries,
                  "image registries sandboxes may pull from (as warren server's)");
  cmd->add_option("--sandbox-network", f->sandbox_network,
                  "IPv4 range of this node's sandbox addresses, or \"none\" for loopback only "
                  "(nodes on one machine need ranges of their own)")
      ->capture_default_str();
  cmd->add_option("--sandbox-dns", f->sandbox_dns, "nameservers written into sandboxes")
      ->capture_default_str();
  cmd->add_option("--sandbox-open", f->sandbox_open,
                  "comma-separated private CIDRs sandboxes may reach nonetheless");
  cmd->callback([&app, f] { RunNode(app, *f); });
}

}  // namespace warren::cli
