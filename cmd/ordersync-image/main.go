// Command ordersync-image writes the release's OCI image layout from static
// ordersync binaries built beforehand (.ci/release builds them and runs
// this). It needs no container daemon and fetches nothing: the base is
// empty, and the CA certificates and time zone data come from this host.
// The operator's binary does not link it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ordersync/ordersync/internal/image"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ordersync-image:", err)
		os.Exit(1)
	}
}

// binaries is the repeated --binary PLATFORM=PATH flag.
type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(s string) error {
	platform, file, ok := strings.Cut(s, "=")
	if !ok || platform == "" || file == "" {
		return fmt.Errorf("%q: want PLATFORM=PATH, as linux/amd64=out/ordersync", s)
	}
	b[platform] = file
	return nil
}

func run(args []string) error {
	fs := flag.NewFlagSet("ordersync-image", flag.ContinueOnError)
	cfg := image.Config{Binaries: binaries{}}
	fs.Var(binaries(cfg.Binaries), "binary", "PLATFORM=PATH of a static ordersync binary (repeat per platform)")
	out := fs.String("out", "", "directory to write the OCI image layout to (must not exist or be empty)")
	fs.StringVar(&cfg.Version, "version", "", "the release's version (the tag and the version label)")
	fs.StringVar(&cfg.Commit, "commit", "unknown", "the commit built")
	created := fs.String("created", "", "the commit's time, RFC 3339")
	fs.StringVar(&cfg.Source, "source", "", "the repository's address (the source label)")
	fs.StringVar(&cfg.CACerts, "ca-certificates", image.CACerts, "CA certificate bundle to copy into the image")
	fs.StringVar(&cfg.ZoneInfo, "zoneinfo", image.ZoneInfo, "time zone database directory to copy into the image")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *out == "" {
		return errors.New("--out: required")
	}
	t, err := time.Parse(time.RFC3339, *created)
	if err != nil {
		return fmt.Errorf("--created: %w", err)
	}
	cfg.Created = t
	idx, err := image.Build(cfg)
	if err != nil {
		return err
	}
	return image.WriteLayout(*out, idx, cfg.Version)
}
