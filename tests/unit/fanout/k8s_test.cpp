// The pods of `kubectl get pods -o json` (a core/v1 List of Pods) as the k8s launcher reads them.
#include "fanout/k8s.h"
#include "fanout/k8s_logs.h"

#include <gtest/gtest.h>

namespace hangscan {
namespace {

// Three pods of an Indexed Job listed out of order, one Pending, one terminating, one with a
// name kubectl would never print (it must not become an argv word), and a PyTorchJob pod with
// a default-container annotation and a sidecar listed first.
constexpr const char* kPods = R"({"apiVersion": "v1", "kind": "List", "items": [
 {"metadata": {"name": "train-2", "namespace": "ml",
   "labels": {"batch.kubernetes.io/job-completion-index": "2"}},
  "spec": {"containers": [{"name": "trainer"}]}, "status": {"phase": "Pending"}},
 {"metadata": {"name": "train-10", "namespace": "ml",
   "labels": {"batch.kubernetes.io/job-completion-index": "10"}, "deletionTimestamp": "2026-11-27T15:00:00Z"},
  "spec": {"containers": [{"name": "trainer"}]}, "status": {"phase": "Running"}},
 {"metadata": {"name": "-rf", "namespace": "ml"}, "spec": {"containers": [{"name": "x"}]},
  "status": {"phase": "Running"}},
 {"metadata": {"name": "pt-worker-0", "namespace": "ml",
   "labels": {"training.kubeflow.org/replica-index": "0"},
   "annotations": {"kubectl.kubernetes.io/default-container": "pytorch"}},
  "spec": {"containers": [{"name": "istio-proxy"}, {"name": "pytorch"}]},
  "status": {"phase": "Running"}}]})";

TEST(K8s, PodsInIndexOrderWithTheirContainers) {
  auto pods = parse_pod_list(kPods, "");
  ASSERT_TRUE(pods.ok()) << pods.error().what();
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_EQ((*pods)[0].name, "pt-worker-0");
  EXPECT_EQ((*pods)[0].container, "pytorch");
  EXPECT_EQ((*pods)[0].index, 0);
  EXPECT_EQ((*pods)[1].name, "train-2");
  EXPECT_EQ((*pods)[1].phase, "Pending");
  EXPECT_EQ((*pods)[1].container, "trainer");
  EXPECT_EQ((*pods)[2].name, "train-10");
  EXPECT_TRUE((*pods)[2].terminating);
  EXPECT_EQ((*pods)[2].name_space, "ml");
}

// restartCount of the chosen container (not of another one of the pod): its log before the
// restart is kubectl logs --previous.
TEST(K8s, RestartsOfTheChosenContainer) {
  constexpr const char* kRestarted = R"({"items": [
   {"metadata": {"name": "w-0"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
    "status": {"phase": "Running", "containerStatuses": [
      {"name": "a", "restartCount": 0}, {"name": "b", "restartCount": 2}]}},
   {"metadata": {"name": "w-1"}, "spec": {"containers": [{"name": "a"}]},
    "status": {"phase": "Running", "containerStatuses": [{"name": "a", "restartCount": "x"}]}}]})";
  auto a = parse_pod_list(kRestarted, "");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)[0].restarts, 0);
  EXPECT_EQ((*a)[1].restarts, 0);
  auto b = parse_pod_list(kRestarted, "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[0].restarts, 2);
}

TEST(K8s, ContainerGivenWins) {
  auto pods = parse_pod_list(kPods, "sidecar");
  ASSERT_TRUE(pods.ok());
  for (const auto& p : *pods) EXPECT_EQ(p.container, "sidecar");
}

TEST(K8s, NotAPodList) {
  for (const char* text :
       {"", "[]", "{\"items\": 3}", "Error from server", "{\"items\": [1, \"x\"]"}) {
    auto pods = parse_pod_list(text, "");
    ASSERT_FALSE(pods.ok()) << text;
    EXPECT_EQ(pods.error().code, Errc::bad_data);
  }
  auto empty = parse_pod_list(R"({"items": [1, "x", {"metadata": 5}]})", "");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

// The options the argv tests start from: the agent at its path in the pods, matching `match`.
K8sOptions agent_options(const char* match) {
  K8sOptions o;
  o.agent_path = "/opt/hangscan/bin/hangscan";
  o.match = match;
  return o;
}

// A running pod whose container is "trainer".
K8sPod trainer_pod(const char* name, const char* name_space, int index) {
  return K8sPod{name, name_space, "trainer", "Running", false, index, 0};
}

TEST(K8s, ExecArgvIsOneWordEach) {
  K8sOptions o = agent_options("python .* train.py");
  o.kubectl = "kubectl";
  o.agent_args = {"--nonblocking"};
  K8sPod pod = trainer_pod("train-0", "ml", 0);
  EXPECT_EQ(k8s_exec_argv(o, pod, std::chrono::milliseconds(24000)),
            (std::vector<std::string>{"kubectl", "exec", "-n", "ml", "train-0", "-c", "trainer",
                                      "--", "/opt/hangscan/bin/hangscan", "agent", "--match",
                                      "python .* train.py", "--timeout-ms", "24000", "--node",
                                      "train-0", "--nonblocking"}));
}

// --copy-agent: the dist tree in and out of the pod, namespace in kubectl cp's NS/POD form.
TEST(K8sCopyArgv, CopyAndRemove) {
  K8sOptions o;
  o.copy_dir = "/home/u/hangscan-0.1.0";
  o.copy_dest = "/tmp/hangscan-agent-42";
  K8sPod pod = trainer_pod("train-0", "ml", 0);
  EXPECT_EQ(k8s_copy_argv(o, pod),
            (std::vector<std::string>{"kubectl", "cp", "-c", "trainer", "/home/u/hangscan-0.1.0",
                                      "ml/train-0:/tmp/hangscan-agent-42"}));
  EXPECT_EQ(k8s_remove_argv(o, pod),
            (std::vector<std::string>{"kubectl", "exec", "-n", "ml", "train-0", "-c", "trainer",
                                      "--", "rm", "-rf", "/tmp/hangscan-agent-42"}));
  pod.name_space.clear();
  EXPECT_EQ(k8s_copy_argv(o, pod).back(), "train-0:/tmp/hangscan-agent-42");
}

// --debug-image: an ephemeral container beside the target container, attached, with ptrace.
TEST(K8s, DebugArgvTargetsTheContainer) {
  K8sOptions o = agent_options("train.py");
  o.debug_image = "registry.example/hangscan:0.1";
  K8sPod pod = trainer_pod("train-0", "ml", 0);
  EXPECT_EQ(k8s_exec_argv(o, pod, std::chrono::milliseconds(24000)),
            (std::vector<std::string>{"kubectl", "debug", "-n", "ml", "train-0",
                                      "--image=registry.example/hangscan:0.1", "--target=trainer",
                                      "--profile=general", "--attach=true", "--quiet", "--",
                                      "/opt/hangscan/bin/hangscan", "agent", "--match", "train.py",
                                      "--timeout-ms", "24000", "--node", "train-0"}));
  // Named, its log is where the agent's output is when the attach came too late.
  o.debug_container = "hangscan-0000abcd";
  EXPECT_EQ(k8s_exec_argv(o, pod, std::chrono::milliseconds(24000))[10],
            "--container=hangscan-0000abcd");
  EXPECT_EQ(k8s_debug_log_argv(o, pod),
            (std::vector<std::string>{"kubectl", "logs", "-n", "ml", "train-0", "-c",
                                      "hangscan-0000abcd"}));
}

// --pod-logs: the pod's log, -c only when asked for, the tail bounded.
TEST(K8s, PodLogArgv) {
  PodLogOptions o;
  EXPECT_EQ(pod_log_argv(o, "train-0"), (std::vector<std::string>{"kubectl", "logs", "train-0",
                                                                  "--tail=20000", "--timestamps"}));
  o.name_space = "ml";
  o.container = "trainer";
  EXPECT_EQ(pod_log_argv(o, "train-0"),
            (std::vector<std::string>{"kubectl", "logs", "-n", "ml", "train-0", "-c", "trainer",
                                      "--tail=20000", "--timestamps"}));
  EXPECT_EQ(pod_log_argv(o, "train-0", true),
            (std::vector<std::string>{"kubectl", "logs", "-n", "ml", "train-0", "-c", "trainer",
                                      "--previous", "--tail=20000", "--timestamps"}));
  // --pod-log-file: the path one word after "--", so tail takes no option from it.
  EXPECT_EQ(pod_file_argv(o, "train-0", "/logs/-n.log"),
            (std::vector<std::string>{"kubectl", "exec", "-n", "ml", "train-0", "-c", "trainer",
                                      "--", "tail", "-c", "67108864", "--", "/logs/-n.log"}));
}

// watch --k8s: the node-local watch in the pod, and the exec that ends its window.
TEST(K8s, WatchAndEndWindowArgv) {
  K8sOptions o = agent_options("train.py");
  o.agent_subcommand = "watch";
  o.agent_args = {"--node-local", "--for", "30", "--ptrace"};
  K8sPod pod = trainer_pod("train-1", "", 1);
  EXPECT_EQ(k8s_exec_argv(o, pod, std::chrono::milliseconds(55000)),
            (std::vector<std::string>{"kubectl", "exec", "train-1", "-c", "trainer", "--",
                                      "/opt/hangscan/bin/hangscan", "watch", "--match", "train.py",
                                      "--timeout-ms", "55000", "--node", "train-1", "--node-local",
                                      "--for", "30", "--ptrace"}));
  EXPECT_EQ(k8s_end_watch_argv(o, pod),
            (std::vector<std::string>{"kubectl", "exec", "train-1", "-c", "trainer", "--",
                                      "/opt/hangscan/bin/hangscan", "watch", "--end-window",
                                      "--node", "train-1"}));
  EXPECT_EQ(k8s_launch_plan({pod}, "job-name=x").description, "1 pod of 'job-name=x'");
}

// --debug-image: the exec that ends the window goes into the round's ephemeral container.
TEST(K8s, EndWindowInTheDebugContainer) {
  K8sOptions o = agent_options("");
  o.debug_image = "registry.example/hangscan:1";
  o.debug_container = "hangscan-0badcafe";
  K8sPod pod = trainer_pod("train-1", "ml", 1);
  EXPECT_EQ(k8s_end_watch_argv(o, pod),
            (std::vector<std::string>{"kubectl", "exec", "-n", "ml", "train-1", "-c",
                                      "hangscan-0badcafe", "--", "/opt/hangscan/bin/hangscan",
                                      "watch", "--end-window", "--node", "train-1"}));
}

// --node-agent: the job pods' UIDs and nodes, each pod given the Running agent pod on its node.
constexpr const char* kJob = R"({"items": [
 {"metadata": {"name": "train-0", "namespace": "ml", "uid": "0b1d2f3e-4a5b-4c6d-8e7f-90a1b2c3d4e5"},
  "spec": {"nodeName": "node-a", "containers": [{"name": "trainer"}]}, "status": {"phase": "Running"}},
 {"metadata": {"name": "train-1", "namespace": "ml", "uid": "not-a-uid; rm -rf"},
  "spec": {"nodeName": "node-b", "containers": [{"name": "trainer"}]}, "status": {"phase": "Running"}}]})";
constexpr const char* kAgents = R"({"items": [
 {"metadata": {"name": "agent-old", "namespace": "hs", "deletionTimestamp": "2026-11-27T15:00:00Z"},
  "spec": {"nodeName": "node-a", "containers": [{"name": "hangscan"}]}, "status": {"phase": "Running"}},
 {"metadata": {"name": "agent-x1", "namespace": "hs"},
  "spec": {"nodeName": "node-a", "containers": [{"name": "hangscan"}]}, "status": {"phase": "Running"}},
 {"metadata": {"name": "agent-x2", "namespace": "hs"},
  "spec": {"nodeName": "node-b", "containers": [{"name": "hangscan"}]}, "status": {"phase": "Pending"}}]})";

TEST(K8s, NodeAgentOnEachPodsNode) {
  auto pods = parse_pod_list(kJob, "");
  auto agents = parse_pod_list(kAgents, "");
  ASSERT_TRUE(pods.ok() && agents.ok());
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].uid, "0b1d2f3e-4a5b-4c6d-8e7f-90a1b2c3d4e5");
  EXPECT_EQ((*pods)[0].node_name, "node-a");
  EXPECT_EQ((*pods)[1].uid, "");  // never passed on
  assign_node_agents(*pods, *agents);
  EXPECT_EQ((*pods)[0].agent_pod, "agent-x1");  // not the terminating one
  EXPECT_EQ((*pods)[0].agent_namespace, "hs");
  EXPECT_EQ((*pods)[0].agent_container, "hangscan");
  EXPECT_EQ((*pods)[1].agent_pod, "");  // node-b's agent is Pending
  K8sOptions o = agent_options("train.py");
  o.node_agent = "app=hangscan-node";
  EXPECT_EQ(k8s_exec_argv(o, (*pods)[0], std::chrono::milliseconds(25000)),
            (std::vector<std::string>{"kubectl", "exec", "-n", "hs", "agent-x1", "-c", "hangscan",
                                      "--", "/opt/hangscan/bin/hangscan", "agent", "--match",
                                      "train.py", "--timeout-ms", "25000", "--node", "train-0",
                                      "--pod-uid", "0b1d2f3e-4a5b-4c6d-8e7f-90a1b2c3d4e5"}));
  EXPECT_EQ(k8s_end_watch_argv(o, (*pods)[0]),
            (std::vector<std::string>{"kubectl", "exec", "-n", "hs", "agent-x1", "-c", "hangscan",
                                      "--", "/opt/hangscan/bin/hangscan", "watch", "--end-window",
                                      "--node", "train-0"}));
}

}  // namespace
}  // namespace hangscan
