// Requests/s and latency through the gateway into a real sandbox, beside nginx proxy_pass to the
// same server in the same run. The server is warren-envd, pid 1 of a NativeRuntime sandbox
// (busybox image layer, envd bind-mounted), listening on 0.0.0.0:49983 in the sandbox's network
// namespace. The gateway reaches it the production way (a socket made inside that namespace,
// RuntimeDialer); nginx cannot enter a namespace, so the bench gives the sandbox a veth pair and
// nginx proxies to envd's address on it. wrk sends the same E2B routing header to every target.
// See README.md for the full-size command and the figures it printed.
//
//   gateway_bench [--smoke] [--threads N] [--connections N] [--duration S] [--rounds N]
//                 [--loops N] [--path /health] [--envd PATH]
//   gateway_bench --serve S   set up, print the ports, wait S seconds (profile by hand)
//
// Exits 77 (ctest: skipped) without root, 1 on any error response or socket error.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/ids.h"
#include "base/log.h"
#include "base/scope_guard.h"
#include "base/strings.h"
#include "base/testing/free_port.h"
#include "gateway/gateway.h"
#include "gateway/runtime_dialer.h"
#include "net/dial.h"
#include "net/http_client.h"
#include "os/cgroup.h"
#include "os/spawn.h"
#include "runtime/native/native_runtime.h"
#include "runtime/testing/busybox_rootfs.h"

namespace warren {
namespace {

using namespace std::chrono_literals;

constexpr int kSkipped = 77;
constexpr const char* kEnvdInSandbox = "/opt/warren/warren-envd";
constexpr const char* kPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

struct Settings {
  bool smoke = false;
  int threads = 2;
  int connections = 64;
  int duration_s = 5;
  int rounds = 3;
  int loops = 0;  // gateway loop threads and nginx workers; 0 = one per core
  std::string path = "/health";
  std::string envd = WARREN_ENVD_BIN;
  int serve_s = 0;  // --serve: set everything up, print the ports, wait (for profiling by hand)
  // The A/B of dialing on the loop (SandboxDialer::DialNow): one more target, a gateway that
  // dials on its dial threads only, in the same interleaved rounds.
  bool dial_ab = false;
};

struct Figures {
  double rps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  uint64_t requests = 0;
  uint64_t bad = 0;               // non-2xx/3xx responses and socket errors
  double cpu_us_per_request = 0;  // CPU time of the proxy's processes / requests (0 = n/a)
};

// CPU seconds a proxy has used so far (all its processes), or nothing to measure.
using CpuProbe = std::function<double()>;

// On-CPU time of one process (its main thread; nginx workers have one) from
// /proc/<pid>/schedstat, in seconds.
double ThreadCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/schedstat");
  double ns = 0;
  in >> ns;
  return ns / 1e9;
}

double OwnCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The children of `parent` (nginx's workers), from /proc.
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    auto fields = base::SplitNonEmpty(std::string_view(stat).substr(paren + 1), ' ');
    // After the command: state, ppid, ...
    if (fields.size() > 1 && std::atoi(std::string(fields[1]).c_str()) == parent) {
      out.push_back(static_cast<pid_t>(std::atoi(name.c_str())));
    }
  }
  return out;
}

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "gateway_bench: %s\n", why.c_str());
  std::exit(1);
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

int WaitChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Runs a short command to completion; its stdout, or an error with its stderr.
Result<std::string> Run(std::vector<std::string> argv) {
  os::SpawnOptions spawn;
  spawn.argv = std::move(argv);
  spawn.env = {kPath};
  spawn.stdin_pipe = false;
  std::string line = base::Join(spawn.argv, " ");
  ASSIGN_OR_RETURN(os::SpawnedChild child, os::Spawn(spawn));
  std::string out = ReadAll(child.stdout_r.get());
  std::string err = ReadAll(child.stderr_r.get());
  int status = WaitChild(child.pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return InternalError(line + " failed: " + err + out);
  }
  return out;
}

// "1.23ms" → 1.23; "850.00us" → 0.85; "1.02s" → 1020.
double ParseMs(std::string_view s) {
  double scale = 1;
  if (s.ends_with("us")) {
    scale = 0.001;
    s.remove_suffix(2);
  } else if (s.ends_with("ms")) {
    s.remove_suffix(2);
  } else if (s.ends_with("s")) {
    scale = 1000;
    s.remove_suffix(1);
  }
  return std::strtod(std::string(s).c_str(), nullptr) * scale;
}

Figures RunWrk(const Settings& s, const std::string& url, const std::string& sandbox_id,
               int duration_s, const CpuProbe& cpu = nullptr) {
  double cpu_before = cpu ? cpu() : 0;
  auto out = Run({"wrk", "-t", std::to_string(s.threads), "-c", std::to_string(s.connections), "-d",
                  std::to_string(duration_s) + "s", "--latency", "-H",
                  "E2b-Sandbox-Id: " + sandbox_id, url});
  if (!out.ok()) Die(out.status().ToString());
  Figures f;
  for (std::string_view line : base::Split(*out, '\n')) {
    line = base::TrimSpace(line);
    auto fields = base::SplitNonEmpty(line, ' ');
    if (line.starts_with("Requests/sec:") && fields.size() >= 2) {
      f.rps = std::strtod(std::string(fields[1]).c_str(), nullptr);
    } else if (line.starts_with("50%") && fields.size() >= 2) {
      f.p50_ms = ParseMs(fields[1]);
    } else if (line.starts_with("99%") && fields.size() >= 2) {
      f.p99_ms = ParseMs(fields[1]);
    } else if (line.find("requests in") != std::string_view::npos && !fields.empty()) {
      f.requests = std::strtoull(std::string(fields[0]).c_str(), nullptr, 10);
    } else if (line.starts_with("Non-2xx or 3xx responses:") && !fields.empty()) {
      f.bad += std::strtoull(std::string(fields.back()).c_str(), nullptr, 10);
    } else if (line.starts_with("Socket errors:")) {
      for (size_t i = 2; i + 1 < fields.size(); i += 2) {
        f.bad += std::strtoull(std::string(fields[i + 1]).c_str(), nullptr, 10);
      }
    }
  }
  if (f.requests == 0) Die("wrk reported no requests for " + url + ":\n" + *out);
  if (cpu) f.cpu_us_per_request = (cpu() - cpu_before) * 1e6 / static_cast<double>(f.requests);
  return f;
}

// A veth pair: one end in the host's namespace, the other in the sandbox's, each with an
// address, so nginx can reach envd. Deleting the host end (destructor) removes both.
class Veth {
 public:
  Veth(pid_t sandbox_pid) {
    int n = static_cast<int>(::getpid() % 200) + 20;
    host_ = "wgbh" + std::to_string(::getpid());
    std::string peer = "wgbs" + std::to_string(::getpid());
    host_ip_ = "10.231." + std::to_string(n) + ".1";
    sandbox_ip_ = "10.231." + std::to_string(n) + ".2";
    std::string pid = std::to_string(sandbox_pid);
    for (const std::vector<std::string>& cmd : std::vector<std::vector<std::string>>{
             {"ip", "link", "add", host_, "type", "veth", "peer", "name", peer},
             {"ip", "addr", "add", host_ip_ + "/30", "dev", host_},
             {"ip", "link", "set", host_, "up"},
             {"ip", "link", "set", peer, "netns", pid},
             {"nsenter", "-t", pid, "-n", "ip", "addr", "add", sandbox_ip_ + "/30", "dev", peer},
             {"nsenter", "-t", pid, "-n", "ip", "link", "set", peer, "up"}}) {
      auto r = Run(cmd);
      if (!r.ok()) {
        Cleanup();
        Die("veth setup: " + r.status().ToString());
      }
      created_ = true;
    }
  }
  ~Veth() { Cleanup(); }
  const std::string& sandbox_ip() const { return sandbox_ip_; }

 private:
  void Cleanup() {
    if (created_) Run({"ip", "link", "del", host_}).status().IgnoreError();
    created_ = false;
  }
  std::string host_;
  std::string host_ip_;
  std::string sandbox_ip_;
  bool created_ = false;
};

// nginx with a private config: proxy_pass to envd as nginx does by default (a new upstream
// connection per request) and with an upstream keep-alive pool.
class Nginx {
 public:
  Nginx(const std::filesystem::path& dir, int workers, const std::string& upstream,
        uint16_t plain_port, uint16_t keepalive_port) {
    std::filesystem::path conf = dir / "nginx.conf";
    std::ofstream out(conf);
    out << "worker_processes " << workers << ";\n"
        << "daemon off;\n"
        << "pid " << (dir / "nginx.pid").string() << ";\n"
        << "error_log " << (dir / "error.log").string() << " warn;\n"
        << "user root;\n"
        << "events { worker_connections 4096; }\n"
        << "http {\n"
        << "  access_log off;\n"
        << "  keepalive_requests 1000000;\n"
        << "  client_body_temp_path " << (dir / "body").string() << ";\n"
        << "  proxy_temp_path " << (dir / "proxy").string() << ";\n"
        << "  upstream envd { server " << upstream << "; keepalive 128; }\n"
        << "  server {\n"
        << "    listen 127.0.0.1:" << plain_port << ";\n"
        << "    location / { proxy_pass http://" << upstream << "; }\n"
        << "  }\n"
        << "  server {\n"
        << "    listen 127.0.0.1:" << keepalive_port << ";\n"
        << "    location / { proxy_pass http://envd; proxy_http_version 1.1;\n"
        << "                 proxy_set_header Connection \"\"; }\n"
        << "  }\n"
        << "}\n";
    out.close();
    os::SpawnOptions spawn;
    spawn.argv = {
        "nginx", "-p", dir.string(), "-c", conf.string(), "-e", (dir / "error.log").string()};
    spawn.env = {kPath};
    spawn.stdin_pipe = false;
    auto child = os::Spawn(spawn);
    if (!child.ok()) Die("nginx: " + child.status().ToString());
    pid_ = child->pid;
    for (uint16_t port : {plain_port, keepalive_port}) {
      bool up = false;
      for (int i = 0; i < 200 && !up; ++i) {
        up = net::DialTcp("127.0.0.1", port, 100ms).ok();
        if (!up) std::this_thread::sleep_for(20ms);
      }
      if (!up) {
        std::ifstream log(dir / "error.log");
        std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        Die("nginx did not listen on " + std::to_string(port) + ":\n" + text);
      }
    }
  }
  // CPU seconds of the workers so far.
  double WorkerCpuSeconds() const {
    double total = 0;
    for (pid_t worker : ChildrenOf(pid_)) total += ThreadCpuSeconds(worker);
    return total;
  }

  // Stops the master we started, by its pid; it stops its workers.
  ~Nginx() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGQUIT);
    for (int i = 0; i < 100; ++i) {
      int status;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(50ms);
    }
    ::kill(pid_, SIGKILL);
    WaitChild(pid_);
  }

 private:
  pid_t pid_ = -1;
};

// The round with the median throughput (its latencies with it); errors of every round.
Figures Median(std::vector<Figures> runs) {
  uint64_t bad = 0;
  for (const Figures& f : runs) bad += f.bad;
  std::sort(runs.begin(), runs.end(),
            [](const Figures& a, const Figures& b) { return a.rps < b.rps; });
  Figures m = runs[runs.size() / 2];
  m.bad = bad;
  return m;
}

void Print(std::string_view name, const Figures& f) {
  std::string cpu = f.cpu_us_per_request > 0
                        ? fmt::format("   cpu {:5.1f} us/req", f.cpu_us_per_request)
                        : std::string();
  std::printf("  %-40s %9.0f req/s   p50 %7.3f ms   p99 %7.3f ms%s%s\n", std::string(name).c_str(),
              f.rps, f.p50_ms, f.p99_ms, cpu.c_str(), f.bad ? "   (ERRORS)" : "");
}

int Main(int argc, char** argv) {
  Settings s;
  CLI::App app{"gateway_bench: the gateway into a real sandbox beside nginx proxy_pass"};
  app.add_flag("--smoke", s.smoke, "a seconds-long pass that only keeps the bench working");
  app.add_option("--threads", s.threads, "wrk threads")->check(CLI::Range(1, 1024));
  app.add_option("--connections", s.connections, "wrk connections")->check(CLI::Range(1, 100000));
  app.add_option("--duration", s.duration_s, "seconds per measurement")
      ->check(CLI::Range(1, 86400));
  app.add_option("--rounds", s.rounds, "measurements of each target")->check(CLI::Range(1, 1000));
  app.add_option("--loops", s.loops, "gateway loop threads and nginx workers (0: one per core)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--path", s.path, "the path every request asks for");
  app.add_option("--envd", s.envd, "the warren-envd binary to run in the sandbox");
  app.add_flag("--dial-ab", s.dial_ab,
               "also measure a gateway that dials on its dial threads only (the A/B of DialNow)");
  app.add_option("--serve", s.serve_s, "set up, print the ports and wait this many seconds")
      ->check(CLI::Range(1, 86400));
  CLI11_PARSE(app, argc, argv);
  // --serve waits for its time or a signal, then cleans up (sandbox, veth, nginx) like a full
  // run: block the signals before any thread exists so that only sigtimedwait sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  if (s.serve_s > 0) pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  if (::geteuid() != 0) {
    std::printf("gateway_bench: skipped, needs root (it runs a sandbox)\n");
    return kSkipped;
  }
  if (s.smoke) {
    s.threads = 1;
    s.connections = 8;
    s.duration_s = 1;
    s.rounds = 1;
  }
  base::SetLogLevel("warn");
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  int loops = s.loops > 0 ? s.loops : cores;

  // The sandbox: busybox layer, warren-envd bind-mounted and run as pid 1.
  runtime::testing::TempDir dir("warren-gateway-bench");
  std::string layer = dir.path() + "/layer";
  if (Status st = runtime::testing::MakeBusyboxLayer(layer); !st.ok()) Die(st.ToString());
  std::string cgroup_parent = "warren-gwbench-" + std::to_string(::getpid());
  runtime::native::NativeRuntimeOptions rt_options;
  rt_options.state_dir = dir.path() + "/state";
  rt_options.cgroup_parent = cgroup_parent;
  auto rt = runtime::native::NativeRuntime::Create(rt_options);
  if (!rt.ok()) Die(rt.status().ToString());
  std::string id = base::NewSandboxId();
  auto destroy = base::ScopeExit([&] {
    (*rt)->Destroy(id).IgnoreError();
    auto h = os::CgroupHierarchies::Detect();
    if (h.ok()) {
      for (const std::string& d : h->DirsFor(cgroup_parent)) ::rmdir(d.c_str());
    }
  });
  runtime::SandboxSpec spec;
  spec.id = id;
  spec.layers = {layer};
  spec.writable_dir = dir.path() + "/rw";
  spec.command = {kEnvdInSandbox,        "--listen",    "0.0.0.0:49983", "--threads",
                  std::to_string(cores), "--log-level", "warn"};
  spec.mounts = {runtime::BindMount{s.envd, kEnvdInSandbox, true}};
  spec.env = {"PATH=/bin"};
  spec.log_path = dir.path() + "/envd.log";
  if (Status st = (*rt)->Create(spec); !st.ok()) Die(st.ToString());
  if (Status st = (*rt)->Start(id); !st.ok()) Die(st.ToString());
  bool ready = false;
  for (int i = 0; i < 500 && !ready; ++i) {
    auto client = net::HttpClient::WithDialer(
        [&](std::chrono::milliseconds t) { return (*rt)->Dial(id, gateway::kEnvdPort, t); },
        "localhost");
    auto resp = client->Do({.target = "/health", .timeout = 1s});
    ready = resp.ok() && resp->status == 204;
    if (!ready) std::this_thread::sleep_for(10ms);
  }
  if (!ready) Die("envd in the sandbox never answered /health");
  auto info = (*rt)->Inspect(id);
  if (!info.ok()) Die(info.status().ToString());
  Veth veth(info->pid);

  // nginx beside the gateway: the same upstream, reached over the veth pair.
  uint16_t nginx_plain = base::testing::FreeLoopbackPort();
  uint16_t nginx_keepalive = base::testing::FreeLoopbackPort();
  std::string upstream = veth.sandbox_ip() + ":" + std::to_string(gateway::kEnvdPort);
  Nginx nginx(dir.path(), loops, upstream, nginx_plain, nginx_keepalive);

  // Two gateways on one route table: without and with upstream keep-alive.
  gateway::RouteTable routes;
  gateway::Route route;
  route.sandbox_id = id;
  route.namespace_ = "default";
  route.name = "bench";
  route.uid = "bench";
  route.state = gateway::RouteState::kRunning;
  route.resource_version = 1;
  routes.Upsert(route);
  gateway::RuntimeDialer dialer(**rt);
  auto start_gateway = [&](bool keepalive, bool dial_on_loop = true) {
    gateway::GatewayOptions o;
    o.server.port = 0;
    o.server.loop_threads = loops;
    o.upstream_keepalive = keepalive;
    o.dial_on_loop = dial_on_loop;
    auto g = gateway::Gateway::Start(o, routes, dialer);
    if (!g.ok()) Die(g.status().ToString());
    return std::move(g).value();
  };
  auto gw_plain = start_gateway(false);
  auto gw_keepalive = start_gateway(true);
  auto gw_dial_threads = start_gateway(false, /*dial_on_loop=*/false);

  std::string path = s.path;
  struct Target {
    const char* name;
    std::string url;
    CpuProbe cpu;
    std::vector<Figures> runs;
  };
  CpuProbe nginx_cpu = [&nginx] { return nginx.WorkerCpuSeconds(); };
  CpuProbe gateway_cpu = OwnCpuSeconds;
  auto local = [&](uint16_t port) { return "http://127.0.0.1:" + std::to_string(port) + path; };
  std::vector<Target> targets = {
      {"direct to envd over the veth (no proxy)", "http://" + upstream + path, nullptr, {}},
      {"nginx proxy_pass, new upstream conn", local(nginx_plain), nginx_cpu, {}},
      {"warren gateway, new upstream conn", local(gw_plain->port()), gateway_cpu, {}},
      {"nginx proxy_pass, upstream keepalive", local(nginx_keepalive), nginx_cpu, {}},
      {"warren gateway, upstream keepalive", local(gw_keepalive->port()), gateway_cpu, {}},
  };
  if (s.dial_ab) {
    targets.push_back({"A/B: new upstream conn, dial threads only",
                       local(gw_dial_threads->port()),
                       gateway_cpu,
                       {}});
  }
  if (s.serve_s > 0) {
    std::printf(
        "gateway_bench: sandbox %s; envd %s; nginx %u (keep-alive %u); gateway %u "
        "(keep-alive %u); serving for %d s\n",
        id.c_str(), upstream.c_str(), nginx_plain, nginx_keepalive, gw_plain->port(),
        gw_keepalive->port(), s.serve_s);
    std::fflush(stdout);
    // Until the time is up or SIGINT/SIGTERM (EINTR, e.g. a debugger attaching, is neither).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(s.serve_s);
    for (;;) {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left <= 0s) break;
      auto secs = std::chrono::duration_cast<std::chrono::seconds>(left);
      timespec wait{secs.count(), static_cast<long>(std::chrono::nanoseconds(left - secs).count())};
      int sig = sigtimedwait(&stop_signals, nullptr, &wait);
      if (sig > 0 || (sig < 0 && errno != EINTR)) break;
    }
    return 0;
  }
  std::printf(
      "gateway_bench: GET %s via wrk -t%d -c%d -d%ds, median of %d rounds, %d cores, gateway "
      "loops=%d, nginx workers=%d, envd threads=%d%s\n",
      path.c_str(), s.threads, s.connections, s.duration_s, s.rounds, cores, loops, loops, cores,
      s.smoke ? " (smoke run: figures mean nothing)" : "");
  std::fflush(stdout);
  if (!s.smoke) {
    for (Target& t : targets) RunWrk(s, t.url, id, 1);  // warm-up
  }
  // Interleaved rounds: load from other work on the machine lands on every target alike.
  for (int round = 0; round < s.rounds; ++round) {
    for (Target& t : targets) t.runs.push_back(RunWrk(s, t.url, id, s.duration_s, t.cpu));
  }
  std::vector<Figures> m;
  for (Target& t : targets) m.push_back(Median(t.runs));
  Print(targets[0].name, m[0]);
  Print(targets[1].name, m[1]);
  Print(targets[2].name, m[2]);
  std::printf("    ratio warren/nginx: %.2f (target >= 0.80)\n", m[2].rps / m[1].rps);
  Print(targets[3].name, m[3]);
  Print(targets[4].name, m[4]);
  std::printf("    ratio warren/nginx: %.2f (target >= 0.80)\n", m[4].rps / m[3].rps);
  if (s.dial_ab) {
    Print(targets[5].name, m[5]);
    std::printf("    ratio to nginx, new upstream conn: %.2f (dialing on the loop: %.2f)\n",
                m[5].rps / m[1].rps, m[2].rps / m[1].rps);
  }
  std::printf(
      "  gateway upstream connections: without keep-alive %llu dialed; with keep-alive "
      "%llu dialed, %llu reused\n",
      static_cast<unsigned long long>(gw_plain->counters().upstream_dialed.load()),
      static_cast<unsigned long long>(gw_keepalive->counters().upstream_dialed.load()),
      static_cast<unsigned long long>(gw_keepalive->counters().upstream_reused.load()));
  gw_plain->Shutdown(0ms);
  gw_keepalive->Shutdown(0ms);
  gw_dial_threads->Shutdown(0ms);
  uint64_t bad = 0;
  for (const Figures& f : m) bad += f.bad;
  if (bad > 0) {
    std::printf("errors (non-2xx or socket errors): %llu\n", static_cast<unsigned long long>(bad));
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace warren

int main(int argc, char** argv) { return warren::Main(argc, argv); }
