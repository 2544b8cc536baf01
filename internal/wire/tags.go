package wire

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// PayloadTag is the struct tag that names a field of a Go value in its
// msgpack payload where the field has no msgpack tag: the names a JSON
// encoding of the struct has are what handlers in other languages, the
// dashboard and `shardq worker --json` show (issue 44). 0.1.0 keyed
// payloads by msgpack tag or field name alone.
const PayloadTag = "json"

// MarshalPayload encodes a caller's value v (a task's payload, a step's
// value) as msgpack, a struct's fields keyed by their msgpack tag, else
// their json tag, else their name. A json tag of "-" leaves the field out
// and omitempty leaves it out when empty, as a msgpack tag would. It
// allocates what msgpack.Marshal does: the enqueue path is measured.
func MarshalPayload(v any) ([]byte, error) {
	enc := msgpack.GetEncoder()
	var buf bytes.Buffer
	enc.Reset(&buf)
	enc.SetCustomStructTag(PayloadTag)
	err := enc.Encode(v)
	enc.Reset(nil) // the pool's next user gets neither the tag nor buf
	msgpack.PutEncoder(enc)
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// UnmarshalPayload decodes the msgpack value b opens with into v, once
// Check accepts it, by the names MarshalPayload writes; a struct payload
// that 0.1.0 wrote, keyed by field names, decodes to the same value (see
// decodePayload).
func UnmarshalPayload(b []byte, v any) error {
	b, err := Normalize(b)
	if err != nil {
		return err
	}
	return decodePayload(b, v)
}

// decodePayload is UnmarshalPayload of bytes Normalize returned.
//
// Where v's type has no field whose json tag renames it or leaves it out,
// both namings are the same and one decode does. Otherwise a payload of
// 0.1.0 is told from one of now by which names it uses: a decode that
// refuses unknown keys is tried by json tags, then by field names, and
// the first that fits takes it. A payload that fits neither exactly (keys
// the type lacks, as a newer producer's may have) is decoded, unknown
// keys ignored, by whichever naming more of its top-level keys fit; json
// tags when as many fit each.
func decodePayload(b []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || !renames(rv.Type().Elem()) {
		return decodeTagged(b, v, PayloadTag, false)
	}
	// the strict decodes may fill part of *v before they fail: each retry
	// starts from what the caller put there
	e := rv.Elem()
	restore := e.SetZero
	if !e.IsZero() {
		saved := reflect.New(e.Type()).Elem()
		saved.Set(e)
		restore = func() { e.Set(saved) }
	}
	if decodeTagged(b, v, PayloadTag, true) == nil {
		return nil
	}
	restore()
	if decodeTagged(b, v, "", true) == nil {
		return nil
	}
	restore()
	tag := PayloadTag
	if obj := msgpackKeys(b); obj != nil && fitCount(obj, v, "") > fitCount(obj, v, PayloadTag) {
		tag = ""
	}
	return decodeTagged(b, v, tag, false)
}

// decodeTagged decodes b into v with fields named by tag ("" for msgpack
// tags and field names alone), refusing keys v lacks if strict. A panic
// of the decoder (a map key of a type Go cannot hash) is an error.
func decodeTagged(b []byte, v any, tag string, strict bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("msgpack: decode into %T: %v", v, r)
		}
	}()
	d := msgpack.GetDecoder()
	defer msgpack.PutDecoder(d)
	d.Reset(bytes.NewReader(b))
	d.SetCustomStructTag(tag)
	d.DisallowUnknownFields(strict)
	return d.Decode(v)
}

// fitCount returns how many keys of the top-level object obj name a
// field of v's type when fields are named by tag.
func fitCount(obj map[string][]byte, v any, tag string) int {
	n := 0
	for k := range obj {
		if fitsKey(k, []byte{0xc0}, v, tag) == nil { // nil fits any field: only the key is tried
			n++
		}
	}
	return n
}

// fitsKey decodes the one-entry map {k: val} into a fresh value of v's
// type, fields named by tag, refusing unknown keys: nil means k names a
// field and val fits it.
func fitsKey(k string, val []byte, v any, tag string) error {
	obj, err := msgpack.Marshal(map[string]msgpack.RawMessage{k: val})
	if err != nil {
		return err
	}
	// obj was just encoded around val, which is part of bytes Normalize
	// returned
	return decodeTagged(obj, fresh(v), tag, true)
}

// renamed caches renames by type.
var renamed sync.Map // reflect.Type → bool

// renames reports whether a struct reachable from t (through fields,
// pointers, slices, arrays and maps) has a field that a json tag names
// otherwise than msgpack tags and field names do, or leaves out: a type
// whose payloads 0.1.0 keyed differently.
func renames(t reflect.Type) bool {
	if r, ok := renamed.Load(t); ok {
		return r.(bool)
	}
	r := renamesIn(t, map[reflect.Type]bool{})
	renamed.Store(t, r)
	return r
}

// renamesIn is renames, seen holding the types on the way to t: a type
// that contains itself is looked at once.
func renamesIn(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return renamesIn(t.Elem(), seen)
	case reflect.Map:
		return renamesIn(t.Key(), seen) || renamesIn(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if f.PkgPath != "" && !f.Anonymous {
				continue // msgpack skips it either way
			}
			if f.Tag.Get("msgpack") == "" {
				name, _, _ := strings.Cut(f.Tag.Get(PayloadTag), ",")
				if name == "-" || name != "" && name != f.Name {
					return true
				}
			}
			if renamesIn(f.Type, seen) {
				return true
			}
		}
	}
	return false
}
