package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/server"
)

// keysFileWatch is how often the mint keys file is looked at for a change,
// as the configuration file is.
const keysFileWatch = time.Second

// fileMint is the top-level mint section.
type fileMint struct {
	Issuer     string    `yaml:"issuer"`
	KeysFile   string    `yaml:"keys_file"`
	SigningKid string    `yaml:"signing_kid"`
	TTL        *duration `yaml:"ttl"`
	Header     string    `yaml:"header"`
}

// filePolicyMint is a policy's mint section.
type filePolicyMint struct {
	Audience string            `yaml:"audience"`
	Claims   map[string]string `yaml:"claims"`
	TTL      *duration         `yaml:"ttl"`
}

// mintKeys names the YAML key of each mint.Options field.
var mintKeys = map[string]string{"Issuer": "mint.issuer", "KeysFile": "mint.keys_file", "SigningKid": "mint.signing_kid",
	"TTL": "mint.ttl", "Header": "mint.header"}

// MintError names the YAML key of err, a refusal of mint.New or mint.Check
// (a keys file that does not load names mint.keys_file).
func MintError(err error) error { return optionError("mint", err, mintKeys) }

// planMint plans the mint section and the policies' mint sections: the
// minter's options (its keys file is read by mint.New, or mint.Check for
// `jwksverify check`) and each minting policy's mint.Policy.
func (f *file) planMint(p *Plan) error {
	if fm := f.Mint; fm != nil {
		o := mint.Options{Issuer: fm.Issuer, KeysFile: fm.KeysFile, SigningKid: fm.SigningKid,
			TTL: orDuration(fm.TTL, 0), Header: fm.Header, Watch: keysFileWatch}
		if fm.TTL != nil && o.TTL == 0 {
			return errors.New("mint.ttl: 0; remove the key for the default (" + mint.DefaultTTL.String() + ")")
		}
		if err := mint.CheckOptions(o); err != nil {
			return MintError(err)
		}
		if err := server.CheckMintHeader(o.Header); o.Header != "" && err != nil {
			return fmt.Errorf("mint.header: %w", err)
		}
		p.Mint = &o
	}
	for i, fp := range f.Policies {
		if fp.Mint == nil {
			continue
		}
		path := fmt.Sprintf("policies[%d] (%s).mint", i, fp.Name)
		if p.Mint == nil {
			return errors.New(path + ": the policy mints but there is no top-level mint section (issuer, keys_file, signing_kid)")
		}
		if fp.Mint.TTL != nil && *fp.Mint.TTL == 0 {
			return errors.New(path + ".ttl: 0; remove the key for mint.ttl")
		}
		mp, err := mint.NewPolicy(mint.PolicySpec{Audience: fp.Mint.Audience, Claims: fp.Mint.Claims, TTL: orDuration(fp.Mint.TTL, 0)})
		if err != nil {
			return optionError(path, err, map[string]string{"Audience": path + ".audience", "TTL": path + ".ttl", "Claims": path + ".claims"})
		}
		if p.Server.MintPolicies == nil {
			p.Server.MintPolicies = make(map[string]*mint.Policy)
		}
		p.Server.MintPolicies[fp.Name] = mp
		// The mapped claims are read from the token's claims by mint;
		// nothing is extracted for them.
	}
	return nil
}
