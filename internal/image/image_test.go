package image

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// testConfig builds from files made here: a stand-in binary per platform,
// a CA bundle and a zoneinfo tree with an alias.
func testConfig(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("zoneinfo/America/El_Salvador", "TZif el salvador")
	if err := os.Symlink("America/El_Salvador", filepath.Join(dir, "zoneinfo/SV")); err != nil {
		t.Fatal(err)
	}
	return Config{
		Binaries: map[string]string{
			"linux/amd64": write("amd64/ordersync", "amd64 binary"),
			"linux/arm64": write("arm64/ordersync", "arm64 binary"),
		},
		Version: "0.1.0", Commit: "560ec5f", Created: time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC),
		Source:  "https://github.com/ordersync/ordersync",
		CACerts: write("ca.crt", "-----BEGIN CERTIFICATE-----"), ZoneInfo: filepath.Join(dir, "zoneinfo"),
	}
}

// TestLayout writes a layout, reads each platform's image back and checks
// what the release's image promises: the user, the entrypoint, the ports,
// the volume and the labels; the same inputs give the same digest.
func TestLayout(t *testing.T) {
	cfg := testConfig(t)
	out := filepath.Join(t.TempDir(), "image")
	idx, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(out, idx, cfg.Version); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"oci-layout", "index.json", "blobs/sha256"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("layout lacks %s: %v", f, err)
		}
	}
	if err := WriteLayout(out, idx, cfg.Version); err == nil {
		t.Error("WriteLayout wrote into a layout that exists")
	}
	again, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d1, d2 := digest(t, idx), digest(t, again); d1 != d2 {
		t.Errorf("two builds of the same inputs differ: %s, %s", d1, d2)
	}

	for _, platform := range []string{"linux/amd64", "linux/arm64"} {
		img, tag, err := Open(out, platform)
		if err != nil {
			t.Fatal(err)
		}
		if tag != "0.1.0" {
			t.Errorf("%s: tag %q, want 0.1.0", platform, tag)
		}
		file, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := file.Config
		if got := file.OS + "/" + file.Architecture; got != platform {
			t.Errorf("config's platform %s, want %s", got, platform)
		}
		if c.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", platform, c.User)
		}
		if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/ordersync"}) || !slices.Equal(c.Cmd, []string{"serve"}) {
			t.Errorf("%s: entrypoint %q, cmd %q", platform, c.Entrypoint, c.Cmd)
		}
		if _, ok := c.ExposedPorts["8080/tcp"]; !ok || len(c.ExposedPorts) != 2 {
			t.Errorf("%s: exposed ports %v", platform, c.ExposedPorts)
		}
		if _, ok := c.Volumes["/var/lib/ordersync"]; !ok {
			t.Errorf("%s: volumes %v", platform, c.Volumes)
		}
		if c.Labels["org.opencontainers.image.version"] != "0.1.0" || c.Labels["org.opencontainers.image.revision"] != "560ec5f" ||
			c.Labels["org.opencontainers.image.source"] != cfg.Source {
			t.Errorf("%s: labels %v", platform, c.Labels)
		}
	}
	if _, _, err := Open(out, "linux/s390x"); err == nil {
		t.Error("Open found an image for a platform not built")
	}
}

// TestUnpack unpacks the amd64 image and finds each file with its owner and
// mode: the binary, the user, the data directory only that user may enter.
func TestUnpack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unpacking with the image's owners needs root (CI runs as root)")
	}
	cfg := testConfig(t)
	out := filepath.Join(t.TempDir(), "image")
	idx, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(out, idx, cfg.Version); err != nil {
		t.Fatal(err)
	}
	img, _, err := Open(out, "linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := Unpack(img, root); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path     string
		body     string
		mode     os.FileMode
		uid, gid uint32
	}{
		{BinaryPath, "amd64 binary", 0o755, 0, 0},
		{CACerts, "-----BEGIN CERTIFICATE-----", 0o644, 0, 0},
		{ZoneInfo + "/America/El_Salvador", "TZif el salvador", 0o644, 0, 0},
		{ZoneInfo + "/SV", "TZif el salvador", 0o644, 0, 0},
		{DataDir, "", os.ModeDir | 0o700, UID, GID},
		{"/tmp", "", os.ModeDir | os.ModeSticky | 0o777, 0, 0},
	} {
		p := filepath.Join(root, tt.path)
		info, err := os.Stat(p)
		if err != nil {
			t.Error(err)
			continue
		}
		if info.Mode() != tt.mode {
			t.Errorf("%s: mode %v, want %v", tt.path, info.Mode(), tt.mode)
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Uid != tt.uid || st.Gid != tt.gid {
			t.Errorf("%s: owner %d:%d, want %d:%d", tt.path, st.Uid, st.Gid, tt.uid, tt.gid)
		}
		if tt.body != "" {
			if b, _ := os.ReadFile(p); string(b) != tt.body {
				t.Errorf("%s holds %q, want %q", tt.path, b, tt.body)
			}
		}
	}
	if target, err := os.Readlink(filepath.Join(root, ZoneInfo, "SV")); err != nil || target != "America/El_Salvador" {
		t.Errorf("zoneinfo alias: %q, %v; want the link kept", target, err)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil || !strings.Contains(string(passwd), "\nordersync:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks the image's user: %q, %v", passwd, err)
	}
}

func TestBuildNamesTheWrongField(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no binary", func(c *Config) { c.Binaries = nil }, "Binaries"},
		{"not linux", func(c *Config) { c.Binaries = map[string]string{"darwin/arm64": "x"} }, "darwin/arm64"},
		{"no version", func(c *Config) { c.Version = "" }, "Version"},
		{"no date", func(c *Config) { c.Created = time.Time{} }, "Created"},
		{"a missing binary", func(c *Config) { c.Binaries["linux/amd64"] = "/nonexistent/ordersync" }, "/nonexistent/ordersync"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			tt.change(&cfg)
			_, err := Build(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build: %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func digest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
