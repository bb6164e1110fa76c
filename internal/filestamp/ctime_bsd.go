//go:build darwin || freebsd || netbsd

package filestamp

import (
	"os"
	"syscall"
	"time"
)

// changeTime returns fi's status change time (ctime), which every write
// moves and which, unlike the modification time, no one can set back.
func changeTime(fi os.FileInfo) (time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(st.Ctimespec.Unix()), true
}
