#include "cli/server_command.h"

#include <fmt/format.h>
#include <signal.h>

#include <optional>

#include "base/log.h"
#include "base/scope_guard.h"
#include "base/small_file.h"
#include "obs/metrics.h"
#include "os/rlimit.h"
#include "server/leader_only.h"
#include "trace/otlp_http_exporter.h"
#include "trace/tracer.h"

namespace warren::cli {
namespace {

struct ServerFlags {
  std::string address = "127.0.0.1";
  int port = 7780;
  std::string data_dir = "/var/lib/warren";
  std::string store_sync = "normal";
  std::string store;         // empty: SQLite in --data-dir
  std::string replica_name;  // empty: server::DefaultReplicaName(port)
  std::string key_dir;
  std::string node = "auto";
  std::string log_level = "info";
  std::string port_file;
  // Unset: 127.0.0.1:<port + 2>, or an ephemeral port when the server's is (run.sh, tests).
  std::optional<std::string> metrics_address;
  std::string quota_redis;
  int quota_redis_timeout_ms = 50;
  int quota_breaker_open_ms = 30'000;
  int quota_reconcile_interval_ms = 30'000;
  std::string allowed_registries;
  std::string sandbox_network = "10.213.0.0/16";
  std::string sandbox_dns = "8.8.8.8";
  std::string sandbox_open;
  std::string domain;
  int tls_port = 443;
  std::string tls_cert;
  std::string tls_key;
  std::string tracing_endpoint;  // empty: tracing off
  double tracing_sampling_ratio = 1.0;
  std::string tracing_service_name = "warren";
  std::string scheduler = "auto";
};

void RunServer(App& app, const ServerFlags& f, const ServerParts& parts) {
  base::SetLogLevel(f.log_level);
  if (f.port < 0 || f.port > 65535) {
    return app.Fail(InvalidArgumentError(fmt::format("--port {} is out of range", f.port)));
  }
  server::ServerOptions options;
  options.address = f.address;
  options.port = static_cast<uint16_t>(f.port);
  options.data_dir = f.data_dir;
  if (f.metrics_address) {
    options.metrics_address = *f.metrics_address == "off" ? "" : *f.metrics_address;
  } else {
    options.metrics_address =
        fmt::format("127.0.0.1:{}", f.port == 0 || f.port > 65533 ? 0 : f.port + 2);
  }
  options.allowed_registries = f.allowed_registries;
  options.sandbox_network = f.sandbox_network;
  options.sandbox_dns = f.sandbox_dns;
  options.sandbox_open = f.sandbox_open;
  if (f.tls_port < 0 || f.tls_port > 65535) {
    return app.Fail(InvalidArgumentError(fmt::format("--tls-port {} is out of range", f.tls_port)));
  }
  if (f.domain.empty() && (!f.tls_cert.empty() || !f.tls_key.empty())) {
    return app.Fail(InvalidArgumentError("--tls-cert and --tls-key need --domain"));
  }
  if (f.tls_cert.empty() != f.tls_key.empty()) {
    return app.Fail(InvalidArgumentError("--tls-cert and --tls-key go together"));
  }
  options.domain = f.domain;
  options.tls_port = static_cast<uint16_t>(f.tls_port);
  options.tls_cert = f.tls_cert;
  options.tls_key = f.tls_key;
  if (f.store_sync == "full") {
    options.store_sync = store::SqliteStoreOptions::Sync::kFull;
  } else if (f.store_sync != "normal") {
    return app.Fail(InvalidArgumentError(
        fmt::format("--store-sync must be normal or full, got \"{}\"", f.store_sync)));
  }
  options.store_url = f.store;
  options.key_dir = f.key_dir;
  if (f.node != "auto" && f.node != "on" && f.node != "off") {
    return app.Fail(
        InvalidArgumentError(fmt::format("--node must be auto, on or off, got \"{}\"", f.node)));
  }
  // On etcd the sandboxes run on `warren node` processes, which the other replicas reach through
  // their relays and the node lifecycle controller hears from; an agent inside one replica would
  // be neither.
  const bool shared_store = !f.store.empty() && f.store != "sqlite";
  if (shared_store && f.node == "on") {
    return app.Fail(InvalidArgumentError(
        "--node on needs the embedded store: a server on etcd is a control plane, and its "
        "sandboxes run on `warren node` processes"));
  }
  options.local_node = f.node == "on" || (f.node == "auto" && !shared_store);
  if (f.scheduler == "auto") {
    options.scheduler = server::SchedulerMode::kAuto;
  } else if (f.scheduler == "on") {
    options.scheduler = server::SchedulerMode::kOn;
  } else if (f.scheduler == "off") {
    options.scheduler = server::SchedulerMode::kOff;
  } else {
    return app.Fail(InvalidArgumentError(
        fmt::format("--scheduler must be auto, on or off, got \"{}\"", f.scheduler)));
  }
  options.replica_name =
      f.replica_name.empty() ? server::DefaultReplicaName(options.port) : f.replica_name;
  if (Status valid = server::ValidateReplicaName(options.replica_name); !valid.ok()) {
    return app.Fail(valid);
  }
  options.quota.redis_address = f.quota_redis;
  for (auto [value, name] :
       {std::pair{f.quota_redis_timeout_ms, "--quota-redis-timeout"},
        std::pair{f.quota_breaker_open_ms, "--quota-breaker-open"},
        std::pair{f.quota_reconcile_interval_ms, "--quota-reconcile-interval"}}) {
    if (value <= 0) {
      return app.Fail(InvalidArgumentError(
          fmt::format("{} must be a positive number of milliseconds, got {}", name, value)));
    }
  }
  options.quota.redis_timeout = std::chrono::milliseconds(f.quota_redis_timeout_ms);
  options.quota.breaker.open_for = std::chrono::milliseconds(f.quota_breaker_open_ms);
  options.quota.reconcile_interval = std::chrono::milliseconds(f.quota_reconcile_interval_ms);
  // Every client connection is a descriptor: serve as many as the hard limit allows (the
  // listeners cap theirs at a share of it, net/http_server.h).
  if (auto nofile = os::RaiseOpenFileLimit(); nofile.ok()) {
    base::Logger("server")->info("open file limit={}", nofile->soft);
  } else {
    base::Logger("server")->warn("open file limit not raised: {}", nofile.status().ToString());
  }
  // Declared before the server, so it outlives every server thread that may end a span, and
  // sends what is queued after the server stopped.
  std::unique_ptr<trace::OtlpHttpExporter> exporter;
  if (!f.tracing_endpoint.empty()) {
    if (!(f.tracing_sampling_ratio >= 0.0 && f.tracing_sampling_ratio <= 1.0)) {
      return app.Fail(InvalidArgumentError(fmt::format(
          "--tracing-sampling-ratio must be between 0 and 1, got {}", f.tracing_sampling_ratio)));
    }
    trace::OtlpExporterOptions tracing;
    tracing.endpoint = f.tracing_endpoint;
    tracing.service_name = f.tracing_service_name;
    auto created = trace::OtlpHttpExporter::Create(tracing, obs::Metrics::Default());
    if (!created.ok()) return app.Fail(created.status());
    exporter = std::move(*created);
    trace::Install(*exporter, {.sampling_ratio = f.tracing_sampling_ratio});
    base::Logger("server")->info("tracing endpoint={} sampling_ratio={}", f.tracing_endpoint,
                                 f.tracing_sampling_ratio);
  }
  auto untrace = base::ScopeGuard([&] {
    trace::Uninstall();
    if (exporter) exporter->Shutdown();
  });
  // Signals are taken by this thread alone: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = server::Server::Create(options);
  if (!server.ok()) return app.Fail(server.status());
  if (parts) {
    Status s = parts(**server);
    if (!s.ok()) return app.Fail(s);
  }
  Status started = (*server)->Start();
  if (!started.ok()) return app.Fail(started);
  if (!f.port_file.empty()) {
    Status s = base::WriteFileAtomically(f.port_file, fmt::format("{}\n", (*server)->port()));
    if (!s.ok()) return app.Fail(s);
  }
  int sig = 0;
  sigwait(&signals, &sig);
  base::Logger("server")->info("stopping signal={}", sig);
  (*server)->Stop();
}

}  // namespace

void AddServerCommand(App& app, ServerParts parts) {
  auto flags = std::make_shared<ServerFlags>();
  auto* cmd = app.cli().add_subcommand(
      "server", "Run the Warren server: the object store, the resource API and every server part");
  cmd->add_option("--address", flags->address, "address to listen on")->capture_default_str();
  cmd->add_option("--port", flags->port, "port to listen on (0 = any free port)")
      ->capture_default_str();
  cmd->add_option("--data-dir", flags->data_dir, "where the store keeps its database")
      ->capture_default_str();
  cmd->add_option("--store-sync", flags->store_sync,
                  "normal (survives a killed process) or full (also survives power loss; "
                  "slower commits); SQLite only")
      ->capture_default_str();
  cmd->add_option("--store", flags->store,
                  "the object store: empty for SQLite in --data-dir (the default), or "
                  "etcd://host:port[,host:port...][/prefix] for etcd (prefix default /warren)");
  cmd->add_option("--key-dir", flags->key_dir,
                  "the API keys and the seal key (default <data-dir>/auth); the servers and "
                  "nodes of one cluster share its seal.key");
  cmd->add_option("--node", flags->node,
                  "run sandboxes in this process too: auto (the default) = on with the embedded "
                  "store, off on etcd (a pure control plane whose sandboxes run on `warren "
                  "node` processes)")
      ->capture_default_str();
  cmd->add_option("--scheduler", flags->scheduler,
                  "place sandboxes on nodes: auto (only when this server runs no node agent), "
                  "on or off")
      ->capture_default_str();
  cmd->add_option("--replica-name", flags->replica_name,
                  "this server's name among replicas sharing an etcd store: claim locks and "
                  "Leases name it; keep it across restarts (default <hostname>-<port>)");
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error, off")
      ->capture_default_str();
  cmd->add_option("--metrics-address", flags->metrics_address,
                  "host:port of a listener serving only /metrics without a key (default "
                  "127.0.0.1:<port + 2>; \"off\" for none; /metrics on --port needs an admin "
                  "key)");
  cmd->add_option("--quota-redis", flags->quota_redis,
                  "host:port of the Redis that keeps team quotas (several servers share it); "
                  "default: kept in this process");
  cmd->add_option("--quota-redis-timeout", flags->quota_redis_timeout_ms,
                  "milliseconds for each quota Redis call; a slower Redis counts as down")
      ->capture_default_str();
  cmd->add_option("--quota-breaker-open", flags->quota_breaker_open_ms,
                  "milliseconds the quota breaker stays open after 3 failures in a row "
                  "(creates go on unreserved meanwhile)")
      ->capture_default_str();
  cmd->add_option("--quota-reconcile-interval", flags->quota_reconcile_interval_ms,
                  "milliseconds between rebuilds of the quota ledger from the store")
      ->capture_default_str();
  cmd->add_option("--port-file", flags->port_file,
                  "write the bound port to this file once serving (for scripts and tests)");
  cmd->add_option("--allowed-registries", flags->allowed_registries,
                  "image registries sandboxes may pull from, and the only hosts a pull or its "
                  "redirects connect to: comma-separated host, host:port or *.domain (default: "
                  "none)");
  cmd->add_option("--sandbox-network", flags->sandbox_network,
                  "IPv4 range of sandbox addresses: each sandbox gets one, a route out through "
                  "the host (masqueraded; IPv4 forwarding is turned on) and nothing of the host, "
                  "of other sandboxes or of private ranges; \"none\": loopback only")
      ->capture_default_str();
  cmd->add_option("--sandbox-dns", flags->sandbox_dns,
                  "comma-separated nameservers written into sandboxes' /etc/resolv.conf")
      ->capture_default_str();
  cmd->add_option("--sandbox-open", flags->sandbox_open,
                  "comma-separated private CIDRs sandboxes may reach nonetheless (e.g. an "
                  "internal package mirror)");
  cmd->add_option("--domain", flags->domain,
                  "domain mode: sandbox ports are https://<port>-<sandboxId>.<domain> (the E2B "
                  "SDK's own URLs; point *.<domain> at this host), create/connect/info answer "
                  "with this domain, and the gateway serves HTTPS on --tls-port");
  cmd->add_option("--tls-port", flags->tls_port,
                  "HTTPS port of the gateway in domain mode (0 = any free port, written to "
                  "<data dir>/gateway-tls.port)")
      ->capture_default_str();
  cmd->add_option("--tls-cert", flags->tls_cert,
                  "PEM certificate chain for *.<domain> (default: one signed by a CA Warren "
                  "makes on first run in <data dir>/tls; trust its ca.crt)");
  cmd->add_option("--tls-key", flags->tls_key, "PEM private key of --tls-cert");
  cmd->add_option("--tracing-endpoint", flags->tracing_endpoint,
                  "OTLP/HTTP collector to send spans to as JSON, e.g. http://127.0.0.1:4318 "
                  "(posts to <endpoint>/v1/traces); default: tracing off");
  cmd->add_option("--tracing-sampling-ratio", flags->tracing_sampling_ratio,
                  "fraction of new traces recorded (0-1); a request's own traceparent keeps "
                  "its sampled flag")
      ->capture_default_str();
  cmd->add_option("--tracing-service-name", flags->tracing_service_name,
                  "service.name of the spans")
      ->capture_default_str();
  cmd->callback([&app, flags, parts] { RunServer(app, *flags, parts); });
}

}  // namespace warren::cli
