package models

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// decodeStrict decodes exactly one YAML document from data into v. Unknown
// fields are errors (yaml.v3 names the field and its line), and so is a
// second document: one file holds one thing.
func decodeStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty document")
		}
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return err
		}
		return fmt.Errorf("line %d: more than one YAML document", extra.Line)
	}
	return nil
}

// CheckFields returns an error naming the line and the field when the mapping
// node n has a key outside allowed. yaml.Node.Decode does not honour
// KnownFields, so kinds that keep a kind-specific body in Spec.Data call this
// before decoding it, keeping model files strict all the way down.
func CheckFields(n *yaml.Node, allowed ...string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: expected a mapping", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(allowed, k.Value) {
			return fmt.Errorf("line %d: unknown field %q (allowed: %s)", k.Line, k.Value, strings.Join(allowed, ", "))
		}
	}
	return nil
}
