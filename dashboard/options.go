package dashboard

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid reports Options that New refuses: no credentials
// without Unauthenticated, an empty or blank secret (a BasicAuth's User
// or Password, a BearerToken), options that contradict each other such
// as Unauthenticated with credentials, or a bad AllowedHosts entry. Its
// messages name the field that was wrong, never a secret's value.
var ErrInvalid = errors.New("dashboard: invalid options")

// validate checks what New cannot default: the dashboard has credentials
// or is unauthenticated on purpose, and no secret is empty by accident.
func (o *Options) validate() error {
	if ba := o.BasicAuth; ba != nil {
		switch {
		case blank(ba.User):
			return fmt.Errorf("%w: BasicAuth.User is empty", ErrInvalid)
		case blank(ba.Password):
			return fmt.Errorf("%w: BasicAuth.Password is empty", ErrInvalid)
		case strings.Contains(ba.User, ":"):
			return fmt.Errorf("%w: BasicAuth.User contains a colon, which basic authentication cannot carry", ErrInvalid)
		}
	}
	switch {
	case o.Unauthenticated && (o.BasicAuth != nil || o.BearerToken != ""):
		return fmt.Errorf("%w: Unauthenticated is set with BasicAuth or BearerToken; set one or the other", ErrInvalid)
	case o.Unauthenticated:
		return nil
	case o.BasicAuth == nil && blank(o.BearerToken):
		return fmt.Errorf("%w: BearerToken is empty and BasicAuth is nil; set one, or Unauthenticated "+
			"for a dashboard behind your own authentication", ErrInvalid)
	case o.BearerToken != "" && blank(o.BearerToken):
		return fmt.Errorf("%w: BearerToken is blank", ErrInvalid)
	}
	return nil
}

// blank reports whether s is empty or only white space: a secret no one
// meant to set.
func blank(s string) bool { return strings.TrimSpace(s) == "" }
