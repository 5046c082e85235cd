//===- RealModelTest.cpp - Invariants on every shipped real-model profile --===//
//
// For each shipped profile at 2x oversubscription on v100-pcie-16gb, every
// policy runs with the invariant checks on: resident bytes never exceed the
// capacity (evictions in flight included), every page a kernel touches is
// resident from its start to its end, bytes are conserved (what leaves was
// resident, what is resident arrived), ideal and the bound are below every
// policy, and so is the cut bound.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/sim/Simulator.h"

#include "llvm/Support/FileSystem.h"

#include "gtest/gtest.h"

using namespace deepum;
using namespace deepum::sim;
using namespace deepum::test;

class SimRealModel : public ::testing::TestWithParam<std::string> {};

TEST_P(SimRealModel, InvariantsHoldForEveryPolicy) {
  std::string Path = shippedProfilePath(GetParam());
  if (!llvm::sys::fs::exists(Path))
    FAIL() << Path << " is missing (regenerate with `make profiles`)";
  v1::Profile P = takeOk(format::readProfile(Path));
  SimOptions O;
  O.Device = takeOk(loadDeviceModel("v100-pcie-16gb"));
  O.GpuMemoryBytes = footprintBytes(P) / 2;
  O.Iterations = 2;
  O.WarmupIterations = 1;
  O.CheckInvariants = true;
  O.ProfileName = Path;
  double Ideal = 0, Bound = 0, Cut = 0;
  for (Policy Pol :
       {Policy::Ideal, Policy::Um, Policy::DeepUm, Policy::SwapLayer, Policy::SwapOpt,
        Policy::Offload}) {
    O.Pol = Pol;
    SimResult R = takeOk(simulate(P, O));
    SCOPED_TRACE(R.PolicyName);
    if (Pol == Policy::Ideal) {
      Ideal = R.IterationUs;
      Bound = R.BoundUs;
      Cut = R.CutBoundUs;
      EXPECT_GT(Ideal, 0);
      EXPECT_GE(Cut, Ideal * (1 - 1e-12));
      continue;
    }
    EXPECT_EQ(R.InvariantViolations, 0u);
    EXPECT_LE(R.PeakResidentBytes, O.GpuMemoryBytes);
    EXPECT_LE(Ideal, R.IterationUs * (1 + 1e-9));
    EXPECT_LE(Bound, R.IterationUs * (1 + 1e-9));
    EXPECT_LE(Cut, R.IterationUs * (1 + 1e-9));
    // Conservation, per steady-state iteration: every byte the link carried
    // to the GPU is demand, driver prefetch or explicit prefetch; what came
    // in and went out balance over the steady state within one capacity.
    EXPECT_NEAR(R.BytesHtoD, R.BytesDemand + R.BytesDriverPrefetched + R.BytesPrefetched, 1);
    EXPECT_LE(R.BytesDtoH, R.BytesHtoD + static_cast<double>(O.GpuMemoryBytes));
    EXPECT_EQ(R.LostReads, 0);
    EXPECT_EQ(R.LostContents, 0);
    EXPECT_GE(R.StallUs, 0);
    EXPECT_NEAR(R.IterationUs, R.IdealUs + R.StallUs, 1e-3 * R.IterationUs);
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, SimRealModel, ::testing::ValuesIn(shippedModels()), testNameOf);
