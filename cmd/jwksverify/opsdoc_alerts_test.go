package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// alertSeverityAfter matches an alert named in prose with its severity in
// the parentheses after it: "`JWKSVerifyX` (page: …" or "(a ticket)".
var alertSeverityAfter = regexp.MustCompile("`(JWKSVerify[A-Za-z0-9]+)`\\s+\\((?:a )?(page|ticket)\\b")

// TestOperationsNamesEveryAlert: docs/OPERATIONS.md's "What to alert on"
// says deploy/prometheus/alerts.yaml "holds these as rules"; an operator
// reading it learns every rule there, with the severity the rule pages or
// tickets with, and no rule the file lacks.
func TestOperationsNamesEveryAlert(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `yaml:"alert"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	severity := map[string]string{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				severity[r.Alert] = r.Labels["severity"]
			}
		}
	}
	if len(severity) < 15 {
		t.Fatalf("alerts.yaml holds %d alerts, want them all (≥ 15): is the decoding broken?", len(severity))
	}
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## What to alert on\n")
	if !ok {
		t.Fatal(`docs/OPERATIONS.md has no "## What to alert on" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	named := map[string]string{} // alert → the severity the prose gives it ("" when none)
	for _, m := range regexp.MustCompile("`(JWKSVerify[A-Za-z0-9]+)`").FindAllStringSubmatch(section, -1) {
		named[m[1]] = ""
	}
	for _, m := range alertSeverityAfter.FindAllStringSubmatch(section, -1) {
		named[m[1]] = m[2]
	}
	for alert, sev := range severity {
		t.Run(alert, func(t *testing.T) {
			got, ok := named[alert]
			switch {
			case !ok:
				t.Errorf(`docs/OPERATIONS.md, "What to alert on", does not name %s (severity %s), a rule of alerts.yaml`, alert, sev)
			case got != "" && got != sev:
				t.Errorf(`docs/OPERATIONS.md, "What to alert on", calls %s a %s; alerts.yaml's severity is %s`, alert, got, sev)
			}
		})
	}
	for alert := range named {
		if _, ok := severity[alert]; !ok {
			t.Errorf(`docs/OPERATIONS.md, "What to alert on", names %s, which alerts.yaml does not hold`, alert)
		}
	}
}
