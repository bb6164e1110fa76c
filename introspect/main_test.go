package introspect_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine behind:
// every upstream call a Client starts must end with its Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
