// Package image assembles ordersync's release image without a container
// daemon: an OCI image on an empty base holding the static binary, the
// host's CA certificates and time zone data, a non-root user and the data
// directory as a volume, one image per platform under one index, written
// as an OCI image layout. It also unpacks such a layout's root file system,
// which is how the release's image test runs the image.
package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where things are in the image, and who runs it.
const (
	BinaryPath = "/usr/local/bin/ordersync"
	DataDir    = "/var/lib/ordersync"
	CACerts    = "/etc/ssl/certs/ca-certificates.crt"
	ZoneInfo   = "/usr/share/zoneinfo"
	// UID and GID are the image's user: not root, and not a number a host
	// account is likely to have (the distroless images' "nonroot").
	UID = 65532
	GID = 65532
	// WebhookPort and AdminPort are the ports the image listens on: the
	// receiver's default, and the admin API's on every interface (which
	// serve accepts only with admin tokens).
	WebhookPort = 8080
	AdminPort   = 9090
	// RefName is the annotation of the layout's index entry that names the
	// image's tag (skopeo's oci:DIR:TAG, crane's --tag).
	RefName = "org.opencontainers.image.ref.name"
)

// Config describes one release's image.
type Config struct {
	// Binaries maps a platform ("linux/amd64") to the static ordersync
	// binary built for it. At least one.
	Binaries map[string]string
	// Version, Commit and Created (the commit's time) go into the labels;
	// Created also dates every file, so that the same tree gives the same
	// image.
	Version string
	Commit  string
	Created time.Time
	// Source is the repository's address, for the source label.
	Source string
	// CACerts and ZoneInfo are taken from the build host. Defaults: the
	// Debian paths of the constants above.
	CACerts  string
	ZoneInfo string
}

func (c Config) withDefaults() Config {
	if c.CACerts == "" {
		c.CACerts = CACerts
	}
	if c.ZoneInfo == "" {
		c.ZoneInfo = ZoneInfo
	}
	if c.Commit == "" {
		c.Commit = "unknown"
	}
	return c
}

func (c Config) validate() error {
	if len(c.Binaries) == 0 {
		return errors.New("image: Binaries: no binary given")
	}
	for p := range c.Binaries {
		if _, err := v1.ParsePlatform(p); err != nil || !strings.HasPrefix(p, "linux/") {
			return fmt.Errorf("image: Binaries: platform %q: want linux/ARCH", p)
		}
	}
	if c.Version == "" {
		return errors.New("image: Version: empty")
	}
	if c.Created.IsZero() {
		return errors.New("image: Created: not set")
	}
	return nil
}

// Labels are the image's OCI annotations as labels.
func (c Config) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "ordersync",
		"org.opencontainers.image.description": "SQL mirror of payment-link orders and exactly-once PAID triggers",
		"org.opencontainers.image.version":     c.Version,
		"org.opencontainers.image.revision":    c.Commit,
		"org.opencontainers.image.source":      c.Source,
		"org.opencontainers.image.created":     c.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
}

// Build returns the release's image index: one image per platform.
func Build(cfg Config) (v1.ImageIndex, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	platforms := make([]string, 0, len(cfg.Binaries))
	for p := range cfg.Binaries {
		platforms = append(platforms, p)
	}
	slices.Sort(platforms)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		platform, _ := v1.ParsePlatform(p)
		img, err := buildImage(cfg, *platform, cfg.Binaries[p])
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: platform},
		})
	}
	return idx, nil
}

func buildImage(cfg Config, platform v1.Platform, binary string) (v1.Image, error) {
	root, err := rootFS(cfg, binary)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(root)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: cfg.Created}, CreatedBy: "ordersync .ci/release", Comment: "ordersync " + cfg.Version},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	file, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	file = file.DeepCopy()
	file.Architecture, file.OS, file.Variant = platform.Architecture, platform.OS, platform.Variant
	file.Created = v1.Time{Time: cfg.Created}
	file.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"serve"},
		WorkingDir: DataDir,
		Env: []string{
			"ORDERSYNC_DATA_DIR=" + DataDir,
			fmt.Sprintf("ORDERSYNC_LISTEN=:%d", WebhookPort),
			fmt.Sprintf("ORDERSYNC_ADMIN_LISTEN=:%d", AdminPort),
		},
		ExposedPorts: map[string]struct{}{
			fmt.Sprintf("%d/tcp", WebhookPort): {},
			fmt.Sprintf("%d/tcp", AdminPort):   {},
		},
		Volumes:    map[string]struct{}{DataDir: {}},
		Labels:     cfg.Labels(),
		StopSignal: "SIGTERM",
	}
	img, err = mutate.ConfigFile(img, file)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return mutate.Annotations(img, cfg.Labels()).(v1.Image), nil
}

// rootFS is the image's one layer as an uncompressed tar.
func rootFS(cfg Config, binary string) ([]byte, error) {
	w := &rootWriter{mtime: cfg.Created.UTC(), dirs: map[string]bool{}}
	w.tw = tar.NewWriter(&w.buf)
	w.dir("/tmp", 0o1777, 0, 0)
	w.dir(DataDir, 0o700, UID, GID)
	w.file("/etc/passwd", 0o644, []byte(fmt.Sprintf(
		"root:x:0:0:root:/root:/sbin/nologin\nordersync:x:%d:%d:ordersync:%s:/sbin/nologin\n", UID, GID, DataDir)))
	w.file("/etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nordersync:x:%d:\n", GID)))
	if err := w.copyFile(binary, BinaryPath, 0o755); err != nil {
		return nil, err
	}
	if err := w.copyFile(cfg.CACerts, CACerts, 0o644); err != nil {
		return nil, err
	}
	if err := w.copyTree(cfg.ZoneInfo, ZoneInfo); err != nil {
		return nil, err
	}
	if w.err == nil {
		w.err = w.tw.Close()
	}
	return w.buf.Bytes(), w.err
}

// rootWriter writes a tar of absolute paths (stored without the leading
// slash), creating each parent directory once, owned by root.
type rootWriter struct {
	buf   bytes.Buffer
	tw    *tar.Writer
	mtime time.Time
	dirs  map[string]bool
	err   error
}

func (w *rootWriter) header(h *tar.Header) {
	if w.err != nil {
		return
	}
	w.parents(h.Name)
	h.Name = strings.TrimPrefix(h.Name, "/")
	if h.Typeflag == tar.TypeDir {
		h.Name += "/"
	}
	h.ModTime, h.Format = w.mtime, tar.FormatPAX
	if w.err == nil {
		w.err = w.tw.WriteHeader(h)
	}
}

func (w *rootWriter) parents(name string) {
	dir := path.Dir(name)
	if dir == "/" || w.dirs[dir] {
		return
	}
	w.dir(dir, 0o755, 0, 0)
}

func (w *rootWriter) dir(name string, mode int64, uid, gid int) {
	if w.dirs[name] {
		return
	}
	w.dirs[name] = true
	w.header(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: gid})
}

func (w *rootWriter) file(name string, mode int64, body []byte) {
	w.header(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body))})
	if w.err == nil {
		_, w.err = w.tw.Write(body)
	}
}

func (w *rootWriter) copyFile(from, to string, mode int64) error {
	body, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	w.file(to, mode, body)
	return w.err
}

// copyTree copies a directory of regular files and symbolic links, the
// links as they are (zoneinfo's aliases).
func (w *rootWriter) copyTree(from, to string) error {
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		name := path.Join(to, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			w.dir(name, 0o755, 0, 0)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			w.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777})
		case d.Type().IsRegular():
			return w.copyFile(p, name, 0o644)
		}
		return w.err
	})
	if err != nil {
		return fmt.Errorf("image: copy %s: %w", from, err)
	}
	return nil
}

// WriteLayout writes idx as an OCI image layout in dir (oci-layout,
// index.json, blobs/), its index entry tagged with the version. dir must
// not exist or be empty.
func WriteLayout(dir string, idx v1.ImageIndex, version string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("image: layout %s: not empty", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("image: layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: version})); err != nil {
		return fmt.Errorf("image: layout %s: %w", dir, err)
	}
	return nil
}
