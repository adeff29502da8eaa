// The real Karpenter controller the e2e tests run, built by tests/e2e/harness/karpenter_build.py.
// The release gpu-pool installs (gpu_pool/model/versions.py KARPENTER); go.sum holds the hashes of
// what its controller's build loads. Never `go mod tidy` here: tidy follows the tests of its
// packages, whose e2e tooling imports service/fis and service/timestreamwrite at versions the
// Go module proxy refuses; `go build` loads only the controller's packages.
module gpupool.test/e2e/karpenter

// Karpenter 1.15.0's go.mod asks for Go 1.26.9: the go command fetches this toolchain from the
// module proxy when the machine's is older.
go 1.26.9

toolchain go1.27.3

require github.com/aws/karpenter-provider-aws v1.15.0

// pkg/aws/sdk.go imports service/timestreamwrite for one interface; the version Karpenter's
// go.mod asks for (v1.43.1) is refused by the proxy, whose list ends at v1.35.25. The
// controller calls nothing of it (it builds no Timestream client), so the older one is safe.
replace github.com/aws/aws-sdk-go-v2/service/timestreamwrite => github.com/aws/aws-sdk-go-v2/service/timestreamwrite v1.35.25
