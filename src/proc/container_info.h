// Which container a host process runs in: runtime, container id, Kubernetes pod UID, name.
//
// Why: from the host, every process of every container is a host pid like any other, so a dump
// captures it (its files through /proc/PID/root and map_files) but the report would not say
// whose it is. The cgroup path is the one place every runtime leaves its container id (and
// Kubernetes the pod UID), in v1 and v2 alike; the name a user knows comes from the runtime's
// own files, read only where the runtime keeps them (podman: its storage's containers.json).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hangscan/model.h"
#include "hangscan/result.h"

namespace hangscan {

// The container named by one cgroup path ("/machine.slice/libpod-<id>.scope",
// "/docker/<id>", "/kubepods/burstable/pod<UID>/<id>", "/kubepods.slice/...-pod<UID>.slice/
// cri-containerd-<id>.scope", ...); nullopt for a path of no container (a host service, a
// user session, a runtime's monitor such as podman's conmon). Ids are 64 hex digits.
std::optional<ContainerInfo> container_from_cgroup_path(std::string_view path);

// The container of a /proc/PID/cgroup text: the first line naming a container id, else the
// first naming only a pod; nullopt when no line names one.
std::optional<ContainerInfo> container_from_proc_cgroup(std::string_view proc_cgroup_text);

// The name podman's storage gives container `id`, from its containers.json text (an array of
// {"id": ..., "names": [...]}); "" when it has no such entry. Only names of podman's own form
// ([A-Za-z0-9][A-Za-z0-9_.-]*, at most 253 bytes) are taken: a name is printed as it is.
std::string podman_name_from_storage(std::string_view containers_json, std::string_view id);

// The container of live process `pid` of this node, named from its runtime's files where they
// are readable (`storage_root`: podman's storage, /var/lib/containers/storage by default);
// nullopt when it runs in none or its cgroup cannot be read.
std::optional<ContainerInfo> read_container_info(
    int pid, const std::string& storage_root = "/var/lib/containers/storage");

// What decides whether hangscan itself may trace: CAP_SYS_PTRACE in its effective set, and
// whether it runs in a container (where the runtime drops that capability by default: Docker,
// podman, Kubernetes). Why: a refusal inside a container has one precise fix, and a user who
// only reads "permission denied" runs it again as root, which changes nothing there.
struct PtraceStanding {
  bool cap_sys_ptrace = false;
  bool in_container = false;
  bool root = false;  // effective uid 0: then the capability is all that is missing
};
// Whether the CapEff line of a /proc/PID/status text holds capability `cap` (19: SYS_PTRACE).
bool status_has_capability(std::string_view status_text, int cap);
// hangscan's own standing, from /proc/self/status, the runtimes' marker files (/.dockerenv,
// /run/.containerenv) and /proc/1/cgroup.
PtraceStanding read_ptrace_standing();

// The error for a refused access to `pid` (ptrace, its maps, its memory): "pid N: permission
// denied (WHAT)", with the container's fix when `standing` is root in a container without
// CAP_SYS_PTRACE, else the general ptrace-permission hint (another user's process: run as its
// user or as root). `what` is "" or " (ptrace)".
Error ptrace_permission_error(int pid, std::string_view what, int err,
                              const PtraceStanding& standing);

}  // namespace hangscan
