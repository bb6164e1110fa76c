// Copyright 2023 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build !purego

package bigmod

import "golang.org/x/sys/cpu"

// supportADX selects the ADCX/ADOX/MULX code path of nat_amd64.s.
//
//lint:ignore U1000 read by the assembly in nat_amd64.s
var supportADX = cpu.X86.HasADX && cpu.X86.HasBMI2
