package app

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// TestEnvVarsAreWhatLoadReads: EnvVars names exactly the variables Load
// asks for, so a file checked against it names none that is ignored.
func TestEnvVarsAreWhatLoadReads(t *testing.T) {
	var asked []string
	flags := AddConfigFlags(pflag.NewFlagSet("serve", pflag.ContinueOnError), ScopeAll)
	if _, err := flags.Load(func(name string) string { asked = append(asked, name); return "" }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(asked)
	want := slices.Sorted(slices.Values(EnvVars()))
	if !slices.Equal(slices.Compact(asked), want) {
		t.Errorf("Load asked for\n%v\nEnvVars lists\n%v", slices.Compact(asked), want)
	}
}
