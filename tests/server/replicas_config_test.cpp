// The [replicas] table and --replicas FILE (programs/tailcut-scheduler/
// replicas_config.h, docs/RELIABILITY.md "Replicas"): what a replica reads,
// and the clear errors of a group set up wrong.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "replicas_config.h"

namespace tailcut {
namespace {

constexpr const char* kPeers = R"(
[replicas]
key_file = "/etc/tailcut/replica.key"
[[replicas.peers]]
id = 1
raft = "127.0.0.1:17790"
client = "tcp://127.0.0.1:17701"
executor = "tcp://127.0.0.1:17700"
[[replicas.peers]]
id = 2
raft = "127.0.0.1:17791"
client = "tcp://127.0.0.1:17711"
executor = "tcp://127.0.0.1:17710"
[[replicas.peers]]
id = 3
raft = "127.0.0.1:17792"
client = "tcp://127.0.0.1:17721"
executor = "tcp://127.0.0.1:17720"
)";

Status Load(const std::string& toml, ServerOptions* o, const std::string& file = "") {
  auto cfg = Config::Parse(toml);
  REQUIRE(cfg.ok());
  o->state_dir = "state";
  if (Status s = LoadReplicasConfig(*cfg, file, o); !s.ok()) return s;
  return cfg->CheckAllUsed();
}

std::string ErrorOf(const std::string& toml, const std::string& file = "") {
  ServerOptions o;
  Status s = Load(toml, &o, file);
  return s.ok() ? "" : s.message();
}

struct TempFile {
  explicit TempFile(const std::string& text) {
    path =
        (std::filesystem::temp_directory_path() / ("tailcut-replicas-" + std::to_string(getpid()) + ".toml")).string();
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
  std::string path;
};

TEST_CASE("replicas config: without [replicas] a scheduler is a single one, as before") {
  ServerOptions o;
  REQUIRE(Load("", &o).ok());
  CHECK_FALSE(o.replicas.enabled());
  CHECK(ValidateReplicationOptions(o).ok());
}

TEST_CASE("replicas config: the table names every peer with its Raft address and endpoints") {
  ServerOptions o;
  Status s = Load("[replicas]\nid = 2\n" + std::string(kPeers).substr(std::string(kPeers).find("key_file")), &o);
  REQUIRE(s.message() == "");
  CHECK(o.replicas.enabled());
  CHECK(o.replicas.id == 2);
  CHECK(o.replicas.key_file == "/etc/tailcut/replica.key");
  CHECK(o.replicas.dir.empty());  // state_dir/raft
  CHECK(o.replicas.max_snapshot_mib == 1024);
  REQUIRE(o.replicas.peers.size() == 3);
  CHECK(o.replicas.peers[1].id == 2);
  CHECK(o.replicas.peers[1].raft_address == "127.0.0.1:17791");
  CHECK(o.replicas.peers[1].client_endpoint == "tcp://127.0.0.1:17711");
  CHECK(o.replicas.peers[1].executor_endpoint == "tcp://127.0.0.1:17710");
}

TEST_CASE("replicas config: a file holds the group (--replicas), the id picks this replica (--replica-id)") {
  TempFile file(kPeers);
  ServerOptions o;
  REQUIRE(Load("replicas.id = 3\n", &o, file.path).message() == "");
  CHECK(o.replicas.id == 3);
  CHECK(o.replicas.peers.size() == 3);
  // The group in both places is one too many.
  const std::string peers(kPeers);
  CHECK(ErrorOf("[replicas]\nid = 1\n" + peers.substr(peers.find("key_file")), file.path).find("not both") !=
        std::string::npos);
  // A key the file does not know is an error, as in any config.
  TempFile typo(std::string(kPeers) + "colour = 1\n");
  CHECK(ErrorOf("replicas.id = 3\n", typo.path).find("colour") != std::string::npos);
  CHECK_FALSE(ErrorOf("replicas.id = 3\n", "/nonexistent/replicas.toml").empty());
}

TEST_CASE("replicas config: the shipped example (configs/replicas.toml) is a valid group of three") {
  ServerOptions o;
  o.state_dir = "state";
  auto cfg = Config::Parse("[replicas]\nid = 3\n");
  REQUIRE(cfg.ok());
  Status s = LoadReplicasConfig(*cfg, TAILCUT_SOURCE_DIR "/configs/replicas.toml", &o);
  REQUIRE(s.message() == "");
  CHECK(o.replicas.id == 3);
  REQUIRE(o.replicas.peers.size() == 3);
  CHECK(o.replicas.peers[2].executor_endpoint == "tcp://10.0.0.3:7700");
}

TEST_CASE("replicas config: a group set up wrong is refused with what to change") {
  const std::string peers(kPeers);
  auto with_id = [&](const std::string& id) {
    return "[replicas]\nid = " + id + "\n" + peers.substr(peers.find("key_file"));
  };
  CHECK(ErrorOf(with_id("4")).find("id (--replica-id or replicas.id) 4 is not one of the peers") != std::string::npos);
  CHECK(ErrorOf(with_id("0")).find("is not one of the peers") != std::string::npos);
  CHECK(ErrorOf(with_id("-1")).find("id must be 1 or more") != std::string::npos);
  CHECK(ErrorOf(with_id("\"two\"")).find("replicas.id") != std::string::npos);
  // No key: the replica port is never open without one.
  std::string no_key = with_id("1");
  no_key.erase(no_key.find("key_file"), no_key.find('\n', no_key.find("key_file")) - no_key.find("key_file") + 1);
  CHECK(ErrorOf(no_key).find("key_file is required") != std::string::npos);
  // Two peers with one id, one Raft address, or a peer missing an endpoint.
  std::string twice = with_id("1");
  twice.replace(twice.find("id = 2"), 6, "id = 3");
  CHECK(ErrorOf(twice).find("two peers with id 3") != std::string::npos);
  std::string same_port = with_id("1");
  same_port.replace(same_port.find("17791"), 5, "17790");
  CHECK(ErrorOf(same_port).find("two peers with raft address") != std::string::npos);
  std::string no_client = with_id("1");
  no_client.erase(no_client.find("client = \"tcp://127.0.0.1:17711\""), 32);
  CHECK(ErrorOf(no_client).find("peer 2 needs raft, client and executor") != std::string::npos);
  std::string url = with_id("1");
  url.replace(url.find("127.0.0.1:17792"), 15, "tcp://127.0.0.1:17792");
  CHECK(ErrorOf(url).find("raft must be HOST:PORT") != std::string::npos);
  std::string bad_endpoint = with_id("1");
  bad_endpoint.replace(bad_endpoint.find("tcp://127.0.0.1:17720"), 21, "nonsense");
  CHECK(ErrorOf(bad_endpoint).find("peer 3") != std::string::npos);
  CHECK(ErrorOf("[replicas]\npeers = 3\n").find("array of tables") != std::string::npos);
  CHECK(ErrorOf("[replicas]\nid = 1\n").find("without peers") != std::string::npos);
  CHECK(ErrorOf(with_id("1") + "[replicas.peers.0.extra]\nx = 1\n").find("extra") != std::string::npos);
  // Timeouts Raft cannot work with.
  CHECK(ErrorOf("[replicas]\nelection_timeout_ms = 150\nheartbeat_timeout_ms = 100\nid = 1\n" +
                peers.substr(peers.find("key_file")))
            .find("election_timeout_ms must be at least twice") != std::string::npos);
  CHECK(ErrorOf("[replicas]\nmax_snapshot_mib = 0\nid = 1\n" + peers.substr(peers.find("key_file")))
            .find("max_snapshot_mib must be 1 or more") != std::string::npos);
  // Replicas keep their journals: an in-memory scheduler cannot be one;
  // an edge is not replicated yet.
  ServerOptions o;
  REQUIRE(Load(with_id("1"), &o).ok());
  o.state_dir.clear();
  CHECK(ValidateReplicationOptions(o).message().find("state_dir") != std::string::npos);
  o.state_dir = "state";
  o.parent.endpoint = "tcp://127.0.0.1:9";
  CHECK(ValidateReplicationOptions(o).message().find("edge") != std::string::npos);
}

}  // namespace
}  // namespace tailcut

namespace tailcut {
namespace {

// docs/RELIABILITY.md, "Executors' queues": a replicated leader's executors
// queue enough tiny tasks to cover the commit wait; a single scheduler's
// options are its own.
TEST_CASE("replicas config: with replicas the executors' queues cover the commit wait") {
  ServerOptions single;
  CHECK(EffectiveCoreOptions(single).pipeline_s == single.core.pipeline_s);
  CHECK(EffectiveCoreOptions(single).max_queue_per_slot == single.core.max_queue_per_slot);
  ServerOptions replica;
  replica.replicas.peers.push_back({1, "127.0.0.1:1", "tcp://127.0.0.1:2", "tcp://127.0.0.1:3"});
  const CoreOptions c = EffectiveCoreOptions(replica);
  CHECK(c.pipeline_s == Approx(0.005 + kCommitAllowanceS));
  CHECK(c.max_queue_per_slot == 2048);  // 512 grown as 5 ms grew to 20 ms
  replica.core.max_queue_per_slot = 4000;
  CHECK(EffectiveCoreOptions(replica).max_queue_per_slot == 4096);
  replica.core.pipeline_s = 0;  // no queueing stays none
  CHECK(EffectiveCoreOptions(replica).pipeline_s == 0);
  CHECK(EffectiveCoreOptions(replica).max_queue_per_slot == 4000);
}

}  // namespace
}  // namespace tailcut
