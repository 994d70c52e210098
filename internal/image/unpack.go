package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Open returns the image for platform ("linux/amd64") in the layout at dir
// and the tag its index entry carries.
func Open(dir, platform string) (v1.Image, string, error) {
	want, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, "", fmt.Errorf("image: platform %q: %w", platform, err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("image: layout %s: %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, "", fmt.Errorf("image: layout %s: %w", dir, err)
	}
	entries, err := top.IndexManifest()
	if err != nil {
		return nil, "", fmt.Errorf("image: layout %s: %w", dir, err)
	}
	if len(entries.Manifests) != 1 {
		return nil, "", fmt.Errorf("image: layout %s: %d entries in index.json, want the release's one", dir, len(entries.Manifests))
	}
	entry := entries.Manifests[0]
	idx, err := top.ImageIndex(entry.Digest)
	if err != nil {
		return nil, "", fmt.Errorf("image: layout %s: entry %s: %w", dir, entry.Digest, err)
	}
	manifests, err := idx.IndexManifest()
	if err != nil {
		return nil, "", fmt.Errorf("image: layout %s: %w", dir, err)
	}
	for _, m := range manifests.Manifests {
		if m.Platform != nil && m.Platform.Satisfies(*want) {
			img, err := idx.Image(m.Digest)
			if err != nil {
				return nil, "", fmt.Errorf("image: layout %s: %s: %w", dir, platform, err)
			}
			return img, entry.Annotations[RefName], nil
		}
	}
	return nil, "", fmt.Errorf("image: layout %s: no image for %s", dir, platform)
}

// Unpack writes the root file system of img into root, an empty directory,
// with the owners and modes its layers give. Each name is cleaned as an
// absolute path first, so none lands outside root.
func Unpack(img v1.Image, root string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("image: unpack: %w", err)
		}
		name := filepath.Clean("/" + h.Name)
		target := filepath.Join(root, name)
		if name == "/" {
			continue
		}
		if err := unpackEntry(tr, h, target); err != nil {
			return fmt.Errorf("image: unpack %s: %w", name, err)
		}
	}
}

func unpackEntry(r io.Reader, h *tar.Header, target string) error {
	mode := os.FileMode(h.Mode & 0o777)
	if h.Mode&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(target, mode); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	case tar.TypeReg:
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	case tar.TypeSymlink:
		if err := os.Symlink(h.Linkname, target); err != nil {
			return err
		}
		return os.Lchown(target, h.Uid, h.Gid)
	default:
		return fmt.Errorf("entry type %q not expected in this image", h.Typeflag)
	}
	// The umask narrowed the mode given at creation.
	if err := os.Chmod(target, mode); err != nil {
		return err
	}
	return os.Lchown(target, h.Uid, h.Gid)
}
