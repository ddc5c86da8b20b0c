// ociimage writes, validates and unpacks the vmzones init-container image with go-containerregistry,
// without a container engine (docs/deploy.md, "The image").
//
//	ociimage build --spec spec.json        one-layer image per platform, an OCI image index, an OCI layout
//	                                       folder and a docker-loadable archive of the first platform
//	ociimage validate --layout DIR         re-reads the layout and checks every digest, size and diff ID
//	ociimage unpack --layout DIR --platform linux/amd64 --out DIR
//	                                       writes the flattened filesystem of that platform's image
//
// Every input of the image is in the spec (files, their owner and time, the config): the same spec gives
// the same digest.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// Spec is what scripts/image.ts hands over.
type Spec struct {
	// Platforms: one image each, the runtime folder of that platform copied under Prefix.
	Platforms []PlatformSpec `json:"platforms"`
	// Prefix is the folder inside the image that holds the runtime ("vmzones").
	Prefix     string            `json:"prefix"`
	Entrypoint []string          `json:"entrypoint"`
	Cmd        []string          `json:"cmd"`
	User       string            `json:"user"`
	Labels     map[string]string `json:"labels"`
	// Created is the time of the config and of every file in the layer (RFC 3339).
	Created string `json:"created"`
	// RefName tags the index inside the layout (org.opencontainers.image.ref.name).
	RefName string `json:"refName"`
	Layout  string `json:"layout"`
	// DockerArchive: `docker load` / `crane validate --tarball` input for the first platform.
	DockerArchive string `json:"dockerArchive"`
	DockerTag     string `json:"dockerTag"`
}

type PlatformSpec struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Root         string `json:"root"`
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "ociimage: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: ociimage build|validate|unpack [flags]")
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	specPath := flags.String("spec", "", "build: the spec JSON")
	layoutDir := flags.String("layout", "", "validate, unpack: the OCI layout folder")
	platform := flags.String("platform", "linux/amd64", "unpack: os/architecture")
	out := flags.String("out", "", "unpack: the folder to write")
	_ = flags.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "build":
		err = build(*specPath)
	case "validate":
		err = validateLayout(*layoutDir)
	case "unpack":
		err = unpack(*layoutDir, *platform, *out)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail("%s: %v", os.Args[1], err)
	}
}

func build(specPath string) error {
	raw, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var spec Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", specPath, err)
	}
	created, err := time.Parse(time.RFC3339, spec.Created)
	if err != nil {
		return fmt.Errorf("%s: created: %w", specPath, err)
	}
	if len(spec.Platforms) == 0 {
		return fmt.Errorf("%s: no platforms", specPath)
	}
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var first v1.Image
	for _, p := range spec.Platforms {
		img, err := platformImage(spec, p, created)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", p.OS, p.Architecture, err)
		}
		if first == nil {
			first = img
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: p.OS, Architecture: p.Architecture},
			},
		})
	}
	if err := os.RemoveAll(spec.Layout); err != nil {
		return err
	}
	lp, err := layout.Write(spec.Layout, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(index, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": spec.RefName,
	})); err != nil {
		return err
	}
	digest, err := index.Digest()
	if err != nil {
		return err
	}
	if spec.DockerArchive != "" {
		tag, err := name.NewTag(spec.DockerTag)
		if err != nil {
			return err
		}
		if err := tarball.WriteToFile(spec.DockerArchive, tag, first); err != nil {
			return err
		}
	}
	fmt.Println(digest.String())
	return nil
}

func platformImage(spec Spec, p PlatformSpec, created time.Time) (v1.Image, error) {
	layerTar, err := tarOf(p.Root, spec.Prefix, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "ociimage build (scripts/image.ts)"},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = p.OS
	cfg.Architecture = p.Architecture
	cfg.Created = v1.Time{Time: created}
	cfg.Config.Entrypoint = spec.Entrypoint
	cfg.Config.Cmd = spec.Cmd
	cfg.Config.User = spec.User
	cfg.Config.Labels = spec.Labels
	return mutate.ConfigFile(img, cfg)
}

// tarOf writes root's files under prefix/ in name order, owned by root, all with the same time: nothing of
// the machine that built it (owner, mtime, walk order) reaches the digest.
func tarOf(root, prefix string, created time.Time) ([]byte, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		info, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, err
		}
		inImage := path.Join(prefix, filepath.ToSlash(rel))
		header := &tar.Header{
			Name:    inImage,
			Mode:    int64(info.Mode().Perm()),
			ModTime: created,
			Format:  tar.FormatPAX,
		}
		switch {
		case info.IsDir():
			header.Typeflag = tar.TypeDir
			header.Name += "/"
		case info.Mode().IsRegular():
			header.Typeflag = tar.TypeReg
			header.Size = info.Size()
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return nil, err
			}
			header.Typeflag = tar.TypeSymlink
			header.Linkname = target
		default:
			return nil, fmt.Errorf("%s: not a file, folder or symlink", p)
		}
		if err := tw.WriteHeader(header); err != nil {
			return nil, err
		}
		if header.Typeflag == tar.TypeReg {
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func validateLayout(dir string) error {
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return err
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return err
	}
	for _, desc := range manifest.Manifests {
		inner, err := index.ImageIndex(desc.Digest)
		if err != nil {
			return err
		}
		if err := validate.Index(inner); err != nil {
			return fmt.Errorf("%s: %w", desc.Digest, err)
		}
		fmt.Printf("valid %s %s\n", desc.Digest, desc.Annotations["org.opencontainers.image.ref.name"])
	}
	return nil
}

func unpack(dir, platform, out string) error {
	osName, arch, ok := strings.Cut(platform, "/")
	if !ok {
		return fmt.Errorf("platform %q is not os/architecture", platform)
	}
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return err
	}
	outerManifest, err := outer.IndexManifest()
	if err != nil {
		return err
	}
	if len(outerManifest.Manifests) != 1 {
		return fmt.Errorf("%s: %d entries in index.json, want 1", dir, len(outerManifest.Manifests))
	}
	index, err := outer.ImageIndex(outerManifest.Manifests[0].Digest)
	if err != nil {
		return err
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return err
	}
	var img v1.Image
	for _, desc := range manifest.Manifests {
		if desc.Platform != nil && desc.Platform.OS == osName && desc.Platform.Architecture == arch {
			if img, err = index.Image(desc.Digest); err != nil {
				return err
			}
		}
	}
	if img == nil {
		return fmt.Errorf("%s: no image for %s", dir, platform)
	}
	reader := mutate.Extract(img)
	defer reader.Close()
	tr := tar.NewReader(reader)
	for {
		header, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		clean := path.Clean("/" + header.Name)
		target := filepath.Join(out, filepath.FromSlash(clean))
		mode := fs.FileMode(header.Mode).Perm()
		switch header.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			f.Close()
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(header.Linkname, target); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: unexpected entry type %c", header.Name, header.Typeflag)
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	// The entrypoint goes beside the filesystem, for the test that runs it.
	encoded, err := json.Marshal(cfg.Config)
	if err != nil {
		return err
	}
	fmt.Println(string(encoded))
	return nil
}
