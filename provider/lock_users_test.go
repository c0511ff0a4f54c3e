package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func lockUsersValue(entries map[string][2]types.String) types.Map {
	elems := map[string]attr.Value{}
	for name, e := range entries {
		elems[name] = types.ObjectValueMust(lockUserAttrTypes, map[string]attr.Value{"key_prefix": e[0], "password": e[1],
			"allow_eval": types.BoolValue(false)})
	}
	return types.MapValueMust(types.ObjectType{AttrTypes: lockUserAttrTypes}, elems)
}

// The tenant checks name the attribute and say how to fix it; values still unknown at plan
// time are left for apply.
func TestCheckLockUsersAtPlan(t *testing.T) {
	s, unknown := types.StringValue, types.StringUnknown() // a zero types.String is null
	pw := func(c string) types.String { return s(c + "-secret-0123456789") }
	admin := s("admin-secret-0123456789")
	cases := []struct {
		name                 string
		users                map[string][2]types.String
		lockUser, lockPasswd types.String
		wantErr              string
	}{
		{name: "isolated", users: map[string][2]types.String{"billing": {s("billing:"), pw("b")}, "orders": {s("orders:"), pw("o")}}},
		{name: "passwords unknown at plan", users: map[string][2]types.String{"billing": {s("billing:"), unknown}, "orders": {s("orders:"), unknown}}},
		{name: "prefix unknown", users: map[string][2]types.String{"billing": {unknown, pw("b")}, "orders": {s("b"), pw("o")}}},
		{name: "overlapping prefixes", users: map[string][2]types.String{"bill": {s("bill"), pw("b")}, "billing": {s("billing:"), pw("o")}},
			wantErr: `lock_users["bill"].key_prefix = "bill" is a prefix of lock_users["billing"].key_prefix`},
		{name: "same prefix twice", users: map[string][2]types.String{"a": {s("x:"), pw("a")}, "b": {s("x:"), pw("b")}},
			wantErr: "Give each lock user a prefix no other one starts with"},
		{name: "glob in prefix", users: map[string][2]types.String{"a": {s("a*"), pw("a")}},
			wantErr: `lock_users["a"].key_prefix = "a*" contains one of`},
		{name: "prefix covers the kit's keys", users: map[string][2]types.String{"a": {s("redlock"), pw("a")}},
			wantErr: `lock_users["a"].key_prefix = "redlock" overlaps the kit's own keys (redlock-kit:*)`},
		{name: "prefix inside the kit's keys", users: map[string][2]types.String{"a": {s("redlock-kit:fence"), pw("a")}},
			wantErr: `lock_users["a"].key_prefix = "redlock-kit:fence" overlaps the kit's own keys`},
		{name: "empty prefix", users: map[string][2]types.String{"a": {s(""), pw("a")}},
			wantErr: "is empty: each lock user needs its own non-empty prefix"},
		{name: "shared password", users: map[string][2]types.String{"a": {s("a:"), pw("x")}, "b": {s("b:"), pw("x")}},
			wantErr: "one redlock_credentials per lock user"},
		{name: "admin's password", users: map[string][2]types.String{"a": {s("a:"), admin}},
			wantErr: `lock_users["a"].password must differ from admin_password`},
		{name: "lock_password as well", users: map[string][2]types.String{"a": {s("a:"), pw("a")}}, lockPasswd: pw("z"),
			wantErr: "lock_password is set and so is lock_users"},
		{name: "lock_user as well", users: map[string][2]types.String{"a": {s("a:"), pw("a")}}, lockUser: s("redlock"),
			wantErr: "lock_user is set and so is lock_users"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			checkLockUsersAtPlan(context.Background(), lockUsersValue(tc.users), tc.lockUser, tc.lockPasswd, admin, &diags)
			expectDiags(t, diags, tc.wantErr, "")
		})
	}
}

// Entries come out sorted by name whatever the map order, so the rendered config and the
// ACL updates are stable.
func TestLockUsersRoundTrip(t *testing.T) {
	s := types.StringValue
	v := lockUsersValue(map[string][2]types.String{"zeta": {s("z:"), s("z-secret-0123456789")}, "alpha": {s("a:"), s("a-secret-0123456789")}})
	users, known, diags := lockUsersFromModel(context.Background(), v)
	if diags.HasError() || !known || len(users) != 2 || users[0].Name != "alpha" || users[1].KeyPrefix != "z:" {
		t.Fatalf("users %+v known %v diags %v", users, known, diags)
	}
	if back := lockUsersToModel(users); !back.Equal(v) {
		t.Fatalf("round trip: %v, want %v", back, v)
	}
	if !lockUsersToModel(nil).IsNull() {
		t.Fatal("no users must be null")
	}
}
