// NVIDIA Xid lines in the formats the driver writes (NVIDIA's "Xid Errors" documentation and
// field reports: with and without pid/name, pid='<unknown>' of recent drivers), and NVML's
// absence. No GPU here: the present case of NVML cannot run on this machine.
#include <gtest/gtest.h>

#include "proc/gpu_memory.h"
#include "proc/gpu_xid.h"

namespace hangscan {
namespace {

TEST(GpuXid, FallenOffTheBusWithPidAndName) {
  auto e = parse_xid(
      "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.", 5.0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->pci, "0000:3b:00");
  EXPECT_EQ(e->xid, 79);
  EXPECT_EQ(e->pid, 1234);
  EXPECT_EQ(e->comm, "python3");
  EXPECT_EQ(e->message, "GPU has fallen off the bus.");
  EXPECT_EQ(xid_words(*e),
            "GPU 0000:3b:00 reported NVIDIA Xid 79 (pid 1234, python3): GPU has fallen off the "
            "bus.");
}

TEST(GpuXid, UnknownPidOfRecentDriversAndNoPidOfOldOnes) {
  auto e = parse_xid(
      "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the "
      "bus.",
      1.0);
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->pid);
  EXPECT_EQ(e->comm, "");
  EXPECT_EQ(xid_words(*e), "GPU 0000:3b:00 reported NVIDIA Xid 79: GPU has fallen off the bus.");
  auto old = parse_xid(
      "NVRM: Xid (PCI:0000:00:1e): 13, Graphics SM Warp Exception on (GPC 0, TPC 0): Out Of Range "
      "Address",
      1.0);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->xid, 13);
  EXPECT_FALSE(old->pid);
  EXPECT_EQ(old->message, "Graphics SM Warp Exception on (GPC 0, TPC 0): Out Of Range Address");
  auto zero = parse_xid("NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.", 1);
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->pid, 0);
  EXPECT_EQ(xid_words(*zero), "GPU 0000:3b:00 reported NVIDIA Xid 79: GPU has fallen off the bus.");
}

TEST(GpuXid, InTheKernelLogWindow) {
  auto records = parse_kmsg(
      "4,100,1000000,-;NVRM: Xid (PCI:0000:1a:00): 48, pid=2345, name=python3, An uncorrectable "
      "double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, "
      "subpartition 0.\n"
      "4,101,9000000,-;NVRM: Xid (PCI:0000:86:00): 31, pid=17453, name=python, Ch 00000008, intr "
      "10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_2 faulted @ 0x7f6b_f6000000. Fault is of "
      "type FAULT_PDE ACCESS_TYPE_VIRT_READ\n"
      "6,102,9500000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05\n"
      "4,103,9600000,-;NVRM: Xid (PCI:0000:86:00): notanumber, pid=1, x\n");
  auto all = xid_events(records, 0);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].xid, 48);
  EXPECT_EQ(all[1].xid, 31);
  EXPECT_EQ(all[1].comm, "python");
  EXPECT_EQ(all[1].pid, 17453);
  auto window = xid_events(records, 5.0);  // the job started 5 s after boot
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].pci, "0000:86:00");
  EXPECT_DOUBLE_EQ(window[0].boot_s, 9.0);
}

TEST(GpuXid, OtherMessagesAreNotXids) {
  EXPECT_FALSE(parse_xid("python3[13286]: segfault at 0 ip 0 sp 0 error 4", 0));
  EXPECT_FALSE(parse_xid("NVRM: GPU at PCI:0000:3b:00: GPU-1234", 0));
  EXPECT_FALSE(parse_xid("NVRM: Xid (PCI:0000:3b:00)", 0));
}

TEST(GpuMemory, AbsentLibraryIsNothingAndNoFailure) {
  EXPECT_FALSE(gpu_memory_by_pid("libnvidia-ml-hangscan-absent.so.1"));
  // A library that loads but is not NVML (no nvmlInit_v2): nothing either.
  EXPECT_FALSE(gpu_memory_by_pid("libm.so.6"));
}

}  // namespace
}  // namespace hangscan
