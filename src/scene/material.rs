//! Materials: what a surface blocks, whether it can be walked on, and its albedo.

/// What a material does to sight, fire and movement. Bits are shared with the shaders.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MaterialFlags(u32);

impl MaterialFlags {
    pub const NONE: Self = Self(0);
    /// Opaque: hides what is behind it (concealment).
    pub const BLOCKS_SIGHT: Self = Self(1);
    /// Stops bullets (cover).
    pub const BLOCKS_FIRE: Self = Self(2);
    /// Agents can stand on it.
    pub const WALKABLE: Self = Self(4);
    /// A solid surface: blocks sight and fire.
    pub const SOLID: Self = Self(1 | 2);

    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }
    #[must_use]
    pub const fn from_bits(bits: u32) -> Self {
        Self(bits & 7)
    }
    #[must_use]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
    #[must_use]
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }
    #[must_use]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
    #[must_use]
    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }
}

impl std::ops::BitOr for MaterialFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

/// Which triangles a query treats as blocking: a triangle blocks when its flags share a bit
/// with the mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mask(pub MaterialFlags);

impl Mask {
    /// Concealment: anything that blocks sight (foliage does, bullet-proof glass does not).
    pub const SIGHT: Mask = Mask(MaterialFlags::BLOCKS_SIGHT);
    /// Cover: anything that blocks fire (glass does, foliage does not).
    pub const FIRE: Mask = Mask(MaterialFlags::BLOCKS_FIRE);
    /// Every triangle that blocks either (used for ground finding).
    pub const ANY_SOLID: Mask = Mask(MaterialFlags::SOLID);
    /// Surfaces agents stand on.
    pub const WALKABLE: Mask = Mask(MaterialFlags::WALKABLE);

    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0.bits()
    }
}

/// A surface type. `albedo` (0..1) is the diffuse reflectance used for contrast.
#[derive(Clone, Debug, PartialEq)]
pub struct Material {
    pub name: String,
    pub flags: MaterialFlags,
    pub albedo: f32,
}

impl Material {
    pub fn new(name: impl Into<String>, flags: MaterialFlags, albedo: f32) -> Material {
        Material {
            name: name.into(),
            flags,
            albedo: albedo.clamp(0.0, 1.0),
        }
    }
}

/// Maps material names from mesh files to flags: the first rule whose pattern matches wins;
/// names matching no rule get `default`.
///
/// A pattern matches whole name tokens, never letters inside a word: names and patterns are cut
/// into lower-case tokens at `_`, `-`, `.`, spaces, digits and case changes (`WallConcrete2`
/// is `wall concrete`, `HTMLDoor` is `html door`), and a pattern matches when its tokens appear
/// as a consecutive run of the name's, each name token equal to the pattern's or to it plus a
/// plural `s` or `es` (`Stairs_01` matches `stair`; `Cabinet_wood` does not match `net`).
///
/// The built-in rules ([`MaterialRules::standard`]):
///
/// | name has the token(s) | flags | albedo |
/// |---|---|---|
/// | `glass` | blocks fire only (bullet-proof glass) | 0.6 |
/// | `foliage`, `leaf`, `leaves`, `bush`, `hedge`, `grass_tall` | blocks sight only | 0.25 |
/// | `water` | walkable, blocks nothing | 0.1 |
/// | `fence`, `net`, `grate` | blocks nothing (see-through, shoot-through) | 0.4 |
/// | `floor`, `ground`, `terrain`, `road`, `grass`, `stair`, `ramp` | solid and walkable | 0.35 |
/// | anything else | solid and walkable (a level mesh's default) | 0.5 |
///
/// Walkability is also limited by slope at query time; the flag only says a surface *may* be
/// stood on.
#[derive(Clone, Debug, PartialEq)]
pub struct MaterialRules {
    pub rules: Vec<(String, Material)>,
    pub default: Material,
}

impl MaterialRules {
    #[must_use]
    pub fn standard() -> MaterialRules {
        use MaterialFlags as F;
        let rule = |pat: &str, flags, albedo| (pat.to_string(), Material::new(pat, flags, albedo));
        MaterialRules {
            rules: vec![
                rule("glass", F::BLOCKS_FIRE, 0.6),
                rule("foliage", F::BLOCKS_SIGHT, 0.25),
                rule("leaf", F::BLOCKS_SIGHT, 0.25),
                rule("leaves", F::BLOCKS_SIGHT, 0.25),
                rule("bush", F::BLOCKS_SIGHT, 0.25),
                rule("hedge", F::BLOCKS_SIGHT, 0.25),
                rule("grass_tall", F::BLOCKS_SIGHT, 0.25),
                rule("water", F::WALKABLE, 0.1),
                rule("fence", F::NONE, 0.4),
                rule("net", F::NONE, 0.4),
                rule("grate", F::NONE, 0.4),
                rule("floor", F::SOLID | F::WALKABLE, 0.35),
                rule("ground", F::SOLID | F::WALKABLE, 0.35),
                rule("terrain", F::SOLID | F::WALKABLE, 0.35),
                rule("road", F::SOLID | F::WALKABLE, 0.3),
                rule("grass", F::SOLID | F::WALKABLE, 0.3),
                rule("stair", F::SOLID | F::WALKABLE, 0.4),
                rule("ramp", F::SOLID | F::WALKABLE, 0.4),
            ],
            default: Material::new("default", F::SOLID | F::WALKABLE, 0.5),
        }
    }

    /// Puts a user rule in front of the others.
    #[must_use]
    pub fn with_rule(mut self, pattern: &str, flags: MaterialFlags, albedo: f32) -> Self {
        self.rules.insert(
            0,
            (
                pattern.to_lowercase(),
                Material::new(pattern, flags, albedo),
            ),
        );
        self
    }

    /// The material for a name from a file; the result keeps the file's name.
    #[must_use]
    pub fn resolve(&self, name: &str) -> Material {
        self.resolver().resolve(name)
    }

    /// The rules with their patterns tokenised once, for resolving many names (a loader).
    pub(crate) fn resolver(&self) -> Resolver<'_> {
        Resolver {
            rules: self,
            patterns: self.rules.iter().map(|(p, _)| tokens(p)).collect(),
        }
    }
}

/// [`MaterialRules`] with each pattern's tokens computed once.
pub(crate) struct Resolver<'a> {
    rules: &'a MaterialRules,
    patterns: Vec<Vec<String>>,
}

impl Resolver<'_> {
    /// [`MaterialRules::resolve`].
    pub(crate) fn resolve(&self, name: &str) -> Material {
        let words = tokens(name);
        let m = (self.patterns.iter().zip(&self.rules.rules))
            .find(|(pat, _)| matches_tokens(&words, pat))
            .map(|(_, (_, m))| m)
            .unwrap_or(&self.rules.default);
        Material::new(name, m.flags, m.albedo)
    }
}

/// Lower-case tokens of a name, cut at non-letters and at case changes (`aB`, and `ABc` before
/// the last capital).
fn tokens(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphabetic() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let lower_to_upper = prev.is_some_and(char::is_lowercase) && c.is_uppercase();
        let acronym_end = prev.is_some_and(char::is_uppercase)
            && c.is_uppercase()
            && next.is_some_and(char::is_lowercase);
        if (lower_to_upper || acronym_end) && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether `pattern`'s tokens occur as a consecutive run of `words` (plural `s`/`es` allowed).
fn matches_tokens(words: &[String], pattern: &[String]) -> bool {
    let same = |w: &str, p: &str| {
        w.strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest == "s" || rest == "es")
    };
    !pattern.is_empty()
        && words
            .windows(pattern.len())
            .any(|run| run.iter().zip(pattern).all(|(w, p)| same(w, p)))
}

impl Default for MaterialRules {
    fn default() -> Self {
        Self::standard()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_first_match_wins_and_user_rules_come_first() {
        let r = MaterialRules::standard();
        assert_eq!(r.resolve("Window_Glass").flags, MaterialFlags::BLOCKS_FIRE);
        assert_eq!(r.resolve("tree_foliage").flags, MaterialFlags::BLOCKS_SIGHT);
        assert_eq!(
            r.resolve("concrete").flags,
            MaterialFlags::SOLID | MaterialFlags::WALKABLE
        );
        let r = r.with_rule("concrete", MaterialFlags::BLOCKS_SIGHT, 0.9);
        let m = r.resolve("Concrete_01");
        assert_eq!(
            (m.flags, m.albedo, m.name.as_str()),
            (MaterialFlags::BLOCKS_SIGHT, 0.9, "Concrete_01")
        );
    }

    #[test]
    fn rules_match_whole_tokens_not_letters_inside_words() {
        let r = MaterialRules::standard();
        let solid = MaterialFlags::SOLID | MaterialFlags::WALKABLE;
        for name in [
            "Cabinet_wood",
            "Magnet_panel",
            "Planet_rock",
            "Integrate_block",
            "Waterproof_wall",
            "Glassblower_bench",
            "Hedgehog_statue",
        ] {
            assert_eq!(r.resolve(name).flags, solid, "{name}");
        }
        for (name, flags) in [
            ("Fishing_Net", MaterialFlags::NONE),
            ("net", MaterialFlags::NONE),
            ("metal-grate.02", MaterialFlags::NONE),
            ("WaterSurface", MaterialFlags::WALKABLE),
            ("RiverWater3", MaterialFlags::WALKABLE),
            ("window glass", MaterialFlags::BLOCKS_FIRE),
            ("Stairs_01", solid),
            ("GRASS_TALL_2", MaterialFlags::BLOCKS_SIGHT),
            ("TallGrass", solid),
            ("HTMLFence", MaterialFlags::NONE),
            ("tree_leaves", MaterialFlags::BLOCKS_SIGHT),
            ("Bushes", MaterialFlags::BLOCKS_SIGHT),
        ] {
            assert_eq!(r.resolve(name).flags, flags, "{name}");
        }
        assert_eq!(
            tokens("WallConcrete2_HTMLDoor-x.y"),
            ["wall", "concrete", "html", "door", "x", "y"]
        );
    }
}
