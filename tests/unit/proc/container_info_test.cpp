// The container of a cgroup path: every runtime's form, v1 and v2, Kubernetes pods, podman names.
#include "proc/container_info.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "util/hints.h"

namespace hangscan {
namespace {

const std::string kId = "4c1f2e3d5b6a79801a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f";
const std::string kUid = "1f2e3d4c-5b6a-7980-1a2b-3c4d5e6f7a8b";
const std::string kSlicedUid = "1f2e3d4c_5b6a_7980_1a2b_3c4d5e6f7a8b";

ContainerInfo info(std::string runtime, std::string id, std::string pod = "") {
  return ContainerInfo{std::move(runtime), std::move(id), "", std::move(pod)};
}

TEST(ContainerInfo, PodmanSystemdAndCgroupfsForms) {
  EXPECT_EQ(container_from_cgroup_path("/machine.slice/libpod-" + kId + ".scope"),
            info("podman", kId));
  EXPECT_EQ(container_from_cgroup_path("/machine.slice/libpod-" + kId + ".scope/container"),
            info("podman", kId));
  EXPECT_EQ(container_from_cgroup_path("/libpod_parent/libpod-" + kId), info("podman", kId));
  // conmon, podman's monitor of the container, runs in a scope of its own: no container.
  EXPECT_EQ(container_from_cgroup_path("/machine.slice/libpod-conmon-" + kId + ".scope"),
            std::nullopt);
}

TEST(ContainerInfo, DockerContainerdCrio) {
  EXPECT_EQ(container_from_cgroup_path("/docker/" + kId), info("docker", kId));
  EXPECT_EQ(container_from_cgroup_path("/system.slice/docker-" + kId + ".scope"),
            info("docker", kId));
  EXPECT_EQ(container_from_cgroup_path("/system.slice/cri-containerd-" + kId + ".scope"),
            info("containerd", kId));
  EXPECT_EQ(container_from_cgroup_path("/machine.slice/crio-" + kId + ".scope"),
            info("cri-o", kId));
  EXPECT_EQ(container_from_cgroup_path("/machine.slice/crio-conmon-" + kId + ".scope"),
            std::nullopt);
}

TEST(ContainerInfo, KubernetesPodsCgroupfsAndSystemd) {
  EXPECT_EQ(container_from_cgroup_path("/kubepods/burstable/pod" + kUid + "/" + kId),
            info("", kId, kUid));
  EXPECT_EQ(container_from_cgroup_path("/kubepods/pod" + kUid + "/" + kId), info("", kId, kUid));
  EXPECT_EQ(container_from_cgroup_path("/kubepods.slice/kubepods-burstable.slice/"
                                       "kubepods-burstable-pod" +
                                       kSlicedUid + ".slice/cri-containerd-" + kId + ".scope"),
            info("containerd", kId, kUid));
  EXPECT_EQ(container_from_cgroup_path("/kubepods.slice/kubepods-pod" + kSlicedUid +
                                       ".slice/docker-" + kId + ".scope"),
            info("docker", kId, kUid));
  // The pod's own level (its pause process's parent) names the pod only.
  EXPECT_EQ(container_from_cgroup_path("/kubepods/besteffort/pod" + kUid), info("", "", kUid));
}

TEST(ContainerInfo, HostPathsAndLookalikesNameNoContainer) {
  for (const std::string& p : std::vector<std::string>{
           "/", "/user.slice/user-0.slice/session-3.scope", "/system.slice/ssh.service",
           "/process_api/d480039bd70b92f35d1ba7a7292a114a", "/slurm/uid_0/job_42/step_0",
           "/" + kId,  // a bare id under no runtime
           "/docker/" + kId.substr(1), "/machine.slice/libpod-XYZ.scope",
           "/kubepods/podnot-a-uid/" + kId, "/docker/" + kId + "G"}) {
    EXPECT_EQ(container_from_cgroup_path(p), std::nullopt) << p;
  }
  // Upper-case hex is not an id any runtime writes.
  std::string upper = kId;
  upper[0] = 'C';
  EXPECT_EQ(container_from_cgroup_path("/docker/" + upper), std::nullopt);
}

TEST(ContainerInfo, NestedContainerTheInnermostWins) {
  std::string inner(64, 'a');
  EXPECT_EQ(container_from_cgroup_path("/docker/" + kId + "/docker/" + inner),
            info("docker", inner));
}

TEST(ContainerInfo, ProcCgroupV1HybridAndV2) {
  // cgroup v1 with podman's cgroupfs manager (this machine's hybrid mode): the v2 line is "/".
  std::string v1 = "12:memory:/libpod_parent/libpod-" + kId + "\n11:pids:/libpod_parent/libpod-" +
                   kId + "\n1:name=systemd:/\n0::/\n";
  EXPECT_EQ(container_from_proc_cgroup(v1), info("podman", kId));
  std::string v2 = "0::/system.slice/docker-" + kId + ".scope\n";
  EXPECT_EQ(container_from_proc_cgroup(v2), info("docker", kId));
  // A line that names the container beats one that names only its pod.
  std::string mixed =
      "5:cpu:/kubepods/pod" + kUid + "\n4:memory:/kubepods/pod" + kUid + "/" + kId + "\n";
  EXPECT_EQ(container_from_proc_cgroup(mixed), info("", kId, kUid));
  EXPECT_EQ(container_from_proc_cgroup("5:cpu:/kubepods/pod" + kUid + "\n"), info("", "", kUid));
  EXPECT_EQ(container_from_proc_cgroup("0::/user.slice\n"), std::nullopt);
  EXPECT_EQ(container_from_proc_cgroup(""), std::nullopt);
}

TEST(ContainerInfo, PodmanNameFromItsStorage) {
  std::string other(64, 'b');
  std::string store = R"([{"id":")" + other + R"(","names":["other"]},{"id":")" + kId +
                      R"(","names":["hs-web_1.x"],"image":"i","layer":"l"}])";
  EXPECT_EQ(podman_name_from_storage(store, kId), "hs-web_1.x");
  EXPECT_EQ(podman_name_from_storage(store, std::string(64, 'c')), "");
  // A name podman would refuse (escape sequences, spaces) is not printed.
  std::string odd = R"([{"id":")" + kId + R"(","names":["\u001b[31mred"]}])";
  EXPECT_EQ(podman_name_from_storage(odd, kId), "");
  EXPECT_EQ(podman_name_from_storage(R"([{"id":")" + kId + R"(","names":["a b"]}])", kId), "");
  EXPECT_EQ(podman_name_from_storage(R"([{"id":")" + kId + R"(","names":[]}])", kId), "");
  EXPECT_EQ(podman_name_from_storage("not json", kId), "");
  EXPECT_EQ(podman_name_from_storage(R"({"id":"x"})", kId), "");
  EXPECT_EQ(podman_name_from_storage(R"([1, {"id": 5}, {"id":")" + kId + R"(","names":[7]}])", kId),
            "");
}

TEST(ContainerInfo, CapEffOfAStatusText) {
  // Docker's and podman's default set (no SYS_PTRACE), then the same with SYS_PTRACE (bit 19).
  const char* dflt = "Name:\tpython3\nCapPrm:\t00000000800405fb\nCapEff:\t00000000800405fb\n";
  const char* traced = "CapEff:\t00000000800c05fb\nCapBnd:\t000001ffffffffff\n";
  EXPECT_FALSE(status_has_capability(dflt, 19));
  EXPECT_TRUE(status_has_capability(dflt, 0));
  EXPECT_TRUE(status_has_capability(traced, 19));
  EXPECT_TRUE(status_has_capability("CapEff:\t000001ffffffffff\n", 19));
  EXPECT_FALSE(status_has_capability("CapEff:\tzz\n", 19));
  EXPECT_FALSE(status_has_capability("Name:\tx\n", 19));
  EXPECT_FALSE(status_has_capability("CapEff:\t000001ffffffffff\n", 64));
}

TEST(ContainerInfo, PermissionErrorNamesTheContainerFixOnlyThere) {
  Error in = ptrace_permission_error(42, " (ptrace)", EPERM, PtraceStanding{false, true, true});
  EXPECT_EQ(in.code, Errc::permission);
  EXPECT_EQ(in.message,
            "pid 42: permission denied (ptrace): hangscan runs in a container without "
            "CAP_SYS_PTRACE");
  EXPECT_EQ(in.hint, hints::container_ptrace());
  EXPECT_NE(in.hint.find("CAP_SYS_PTRACE: start it with --cap-add SYS_PTRACE"), std::string::npos);
  EXPECT_NE(in.hint.find("kubectl debug --profile=general"), std::string::npos);
  EXPECT_NE(in.hint.find("securityContext.capabilities.add: [\"SYS_PTRACE\"]"), std::string::npos);
  EXPECT_NE(in.hint.find("--nonblocking"), std::string::npos);
  // With the capability, outside a container, or not root (another user's process: the fix is
  // the user, not the capability): the general hint.
  for (PtraceStanding s : {PtraceStanding{true, true, true}, PtraceStanding{false, false, true},
                           PtraceStanding{false, true, false}}) {
    Error host = ptrace_permission_error(42, "", EACCES, s);
    EXPECT_EQ(host.message, "pid 42: permission denied");
    EXPECT_EQ(host.hint, hints::ptrace_permission());
  }
}

}  // namespace
}  // namespace hangscan
