//go:build !purego

package bigmod

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// This file is ours, not upstream's (see doc.go). nat_amd64.s has two code
// paths in each sized addMulVVW, chosen at every call by supportADX: ADCX,
// ADOX and MULX when the CPU has ADX and BMI2, plain MULQ/ADCQ otherwise.
// Upstream's tests run whichever path the test machine selects, so on a
// machine with ADX the MULQ path — the one older or restricted CPUs (and
// some virtual machines) take — never runs. These tests run both, and CI
// also runs this package and verify/internal/rsaverify with GODEBUG=cpu.adx=off.

// withADX runs f with supportADX set to on. Tests using it must not be
// parallel: the assembly reads the variable on every call.
func withADX(on bool, f func()) {
	old := supportADX
	supportADX = on
	defer func() { supportADX = old }()
	f()
}

// adxPaths are the paths this machine can run: MULQ always, ADX when the
// CPU has it.
func adxPaths() []bool {
	if cpu.X86.HasADX && cpu.X86.HasBMI2 {
		return []bool{false, true}
	}
	return []bool{false}
}

// TestAssemblyPathsAddMulVVW compares each sized addMulVVW, on both paths,
// with the generic Go addMulVVW: random operands and the all-ones ones that
// carry in every word.
func TestAssemblyPathsAddMulVVW(t *testing.T) {
	sized := []struct {
		bits int
		f    func(z, x *uint, y uint) uint
	}{{1024, addMulVVW1024}, {1536, addMulVVW1536}, {2048, addMulVVW2048}}
	r := rand.New(rand.NewPCG(1, 2))
	for _, adx := range adxPaths() {
		for _, s := range sized {
			t.Run(fmt.Sprintf("adx=%v/%d", adx, s.bits), func(t *testing.T) {
				n := s.bits / _W
				for trial := range 200 {
					x, z := make([]uint, n), make([]uint, n)
					y := uint(r.Uint64())
					for i := range n {
						x[i], z[i] = uint(r.Uint64()), uint(r.Uint64())
					}
					if trial == 0 { // every word and y all ones
						for i := range n {
							x[i], z[i] = ^uint(0), ^uint(0)
						}
						y = ^uint(0)
					}
					want := slices.Clone(z)
					wantC := addMulVVW(want, x, y)
					var c uint
					withADX(adx, func() { c = s.f(&z[0], &x[0], y) })
					if !slices.Equal(z, want) || c != wantC {
						t.Fatalf("trial %d: addMulVVW%d = %X, carry %X; want %X, carry %X", trial, s.bits, z, c, want, wantC)
					}
				}
			})
		}
	}
}

// TestAssemblyPathsAgainstMathBig runs the operations RSA uses — Mul with
// an odd (Montgomery) and an even modulus, Exp, and ExpShortVarTime with
// e = 3 and 65537 — on moduli of exactly 1024, 1536 and 2048 bits (the sizes
// with assembly) and one size without, on both paths, against math/big.
func TestAssemblyPathsAgainstMathBig(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	random := func(bits int) *big.Int {
		b := make([]byte, bits/8)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		b[0] |= 0x80 // exactly bits long
		return new(big.Int).SetBytes(b)
	}
	for _, adx := range adxPaths() {
		for _, bits := range []int{1024, 1536, 2048, 3072} {
			t.Run(fmt.Sprintf("adx=%v/%d", adx, bits), func(t *testing.T) {
				for trial := range 8 {
					mb := random(bits)
					odd := trial%2 == 0
					if odd {
						mb.SetBit(mb, 0, 1)
					} else {
						mb.SetBit(mb, 0, 0)
					}
					m, err := NewModulus(mb.Bytes())
					if err != nil {
						t.Fatal(err)
					}
					xb := new(big.Int).Mod(random(bits), mb)
					yb := new(big.Int).Mod(random(bits), mb)
					if trial < 2 { // the largest operands, for both kinds of modulus
						xb.Sub(mb, big.NewInt(1))
						yb.Sub(mb, big.NewInt(1))
					}
					nat := func(v *big.Int) *Nat {
						n, err := NewNat().SetBytes(v.FillBytes(make([]byte, m.Size())), m)
						if err != nil {
							t.Fatal(err)
						}
						return n
					}
					check := func(op string, got *Nat, want *big.Int) {
						t.Helper()
						if g := new(big.Int).SetBytes(got.Bytes(m)); g.Cmp(want) != 0 {
							t.Errorf("trial %d (odd %v) %s = %x, want %x", trial, odd, op, g, want)
						}
					}
					withADX(adx, func() {
						check("Mul", nat(xb).Mul(nat(yb), m), new(big.Int).Mod(new(big.Int).Mul(xb, yb), mb))
						if !odd {
							return // Exp needs an odd modulus
						}
						e := random(64).Bytes()
						check("Exp", NewNat().Exp(nat(xb), e, m), new(big.Int).Exp(xb, new(big.Int).SetBytes(e), mb))
						for _, short := range []uint{3, 65537} {
							check(fmt.Sprint("ExpShortVarTime e=", short), NewNat().ExpShortVarTime(nat(xb), short, m),
								new(big.Int).Exp(xb, new(big.Int).SetUint64(uint64(short)), mb))
						}
					})
				}
			})
		}
	}
}

// TestGODEBUGTurnsADXOff proves that the CI step running this package and
// verify/internal/rsaverify with GODEBUG=cpu.adx=off does run the MULQ path:
// golang.org/x/sys/cpu honours the setting before supportADX is computed.
func TestGODEBUGTurnsADXOff(t *testing.T) {
	if !strings.Contains(os.Getenv("GODEBUG"), "cpu.adx=off") {
		t.Logf("GODEBUG=%q: supportADX = %v (the check applies with cpu.adx=off)", os.Getenv("GODEBUG"), supportADX)
		return
	}
	if supportADX {
		t.Fatal("supportADX = true under GODEBUG=cpu.adx=off, want false")
	}
}
