//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package filestamp

import (
	"os"
	"time"
)

// changeTime reports no status change time where the platform's FileInfo
// has none at hand.
func changeTime(os.FileInfo) (time.Time, bool) { return time.Time{}, false }
