package service

import (
	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/mint"
)

// minter returns the minter of plan (nil: the plan mints nothing): the
// previous generation's when the plan's mint section is the same
// (mint.Same) — its cache kept, its keys file read again (a file that does
// not load fails the build; the minter keeps its keys) — else a new one,
// which undo closes. A check builds one that does not watch its file.
func (b *builder) minter(plan *config.Plan) (*mint.Minter, error) {
	if plan.Mint == nil {
		return nil, nil
	}
	o := *plan.Mint
	o.Logger = b.s.opts.Logger
	if b.check {
		o.Watch = 0
	}
	if p := b.prev; p != nil && p.minter != nil && mint.Same(p.mintOpts, o) {
		if _, err := p.minter.Reload(); err != nil {
			return nil, config.MintError(&mint.OptionError{Field: "KeysFile", Err: err})
		}
		return p.minter, nil
	}
	m, err := mint.New(o)
	if err != nil {
		return nil, config.MintError(err)
	}
	b.freshMinter = m
	return m, nil
}
