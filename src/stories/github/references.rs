//! What a GitHub issue says it waits for. People write "Depends on #3",
//! "Blocked by octo/lib#12, #4" or paste an issue's address, and go on
//! with prose that names other issues for other reasons ("it replaces the
//! hack in #1"). Only the references a phrase lists are dependencies: the
//! list ends at the first word that is not one. Of those, only an issue of
//! the repository the run works in can be waited for; another
//! repository's issue is none of the run's stories.

use std::fmt;

/// One issue a dependency phrase names, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Reference {
    /// `#3`: an issue of the same repository.
    Local(u64),
    /// `owner/name#3`, or the address of an issue or pull request
    /// (`https://github.com/owner/name/issues/3`): `repo` is `owner/name`,
    /// `host` is given for an address.
    Other {
        host: Option<String>,
        repo: String,
        number: u64,
        written: String,
    },
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reference::Local(number) => write!(f, "#{number}"),
            Reference::Other { written, .. } => f.write_str(written),
        }
    }
}

/// The repository the issues were listed from: the host and `owner/name`
/// of their addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Repository {
    host: String,
    repo: String,
}

impl Repository {
    /// The repository of an issue's address,
    /// `https://github.com/owner/name/issues/3`.
    pub(super) fn of_url(url: &str) -> Option<Repository> {
        let (host, repo, _) = split_url(url)?;
        Some(Repository { host, repo })
    }
}

impl Reference {
    /// The number of the issue of `this` repository the reference names,
    /// if it names one. A reference `owner/name#N` or an address can be
    /// placed only when the repository is known.
    pub(super) fn local_number(&self, this: Option<&Repository>) -> Option<u64> {
        match self {
            Reference::Local(number) => Some(*number),
            Reference::Other {
                host, repo, number, ..
            } => {
                let this = this?;
                let same_host = host
                    .as_deref()
                    .is_none_or(|host| host.eq_ignore_ascii_case(&this.host));
                (same_host && repo.eq_ignore_ascii_case(&this.repo)).then_some(*number)
            }
        }
    }
}

/// The references of every dependency phrase in `body`: a line that
/// starts (after an optional list marker) with "Depends on" or "Blocked
/// by", in any case, followed by a list of references.
pub(super) fn dependencies(body: &str) -> Vec<Reference> {
    let mut references = Vec::new();
    for line in body.lines() {
        let line = line.trim_start();
        let line = line
            .strip_prefix(['-', '*', '+'])
            .map_or(line, str::trim_start);
        let rest = ["depends on", "blocked by"].iter().find_map(|lead| {
            let head = line.get(..lead.len())?;
            head.eq_ignore_ascii_case(lead).then(|| &line[lead.len()..])
        });
        if let Some(rest) = rest {
            references.extend(listed(rest));
        }
    }
    references
}

/// The references at the start of `text`, separated by commas, "and" or
/// spaces; the first word that is none ends the list.
fn listed(text: &str) -> Vec<Reference> {
    let mut references = Vec::new();
    let words = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .filter(|word| !word.is_empty());
    for (index, word) in words.enumerate() {
        if word.eq_ignore_ascii_case("and") || word == "&" || (index == 0 && word == ":") {
            continue;
        }
        let word = if index == 0 {
            word.strip_prefix(':').unwrap_or(word)
        } else {
            word
        };
        match reference(word.trim_end_matches(['.', ':', '!', '?'])) {
            Some(found) => references.push(found),
            None => break,
        }
    }
    references
}

/// `#3`, `owner/name#3` or an issue's address.
fn reference(word: &str) -> Option<Reference> {
    if let Some(digits) = word.strip_prefix('#') {
        return number(digits).map(Reference::Local);
    }
    if let Some((host, repo, number)) = split_url(word) {
        return Some(Reference::Other {
            host: Some(host),
            repo,
            number,
            written: word.to_owned(),
        });
    }
    let (repo, digits) = word.split_once('#')?;
    let (owner, name) = repo.split_once('/')?;
    let named = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (named(owner) && named(name)).then_some(())?;
    Some(Reference::Other {
        host: None,
        repo: repo.to_owned(),
        number: number(digits)?,
        written: word.to_owned(),
    })
}

/// `https://host/owner/name/issues/3` (or `/pull/3`, with or without a
/// `#…` after it): its host, `owner/name` and number.
fn split_url(url: &str) -> Option<(String, String, u64)> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let rest = rest.split('#').next().unwrap_or(rest);
    let mut parts = rest.trim_end_matches('/').split('/');
    let (host, owner, name, kind, digits) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    if parts.next().is_some() || !matches!(kind, "issues" | "pull") || host.is_empty() {
        return None;
    }
    if owner.is_empty() || name.is_empty() {
        return None;
    }
    Some((host.to_owned(), format!("{owner}/{name}"), number(digits)?))
}

fn number(digits: &str) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(body: &str, this: Option<&Repository>) -> Vec<Option<u64>> {
        dependencies(body)
            .iter()
            .map(|reference| reference.local_number(this))
            .collect()
    }

    #[test]
    fn a_phrase_lists_its_references_and_the_prose_after_is_not_read() {
        let body = "Depends on #3 and #4\r\n- blocked by: #9\nSee #12 for context.\n";
        assert_eq!(local(body, None), [Some(3), Some(4), Some(9)]);
        assert_eq!(
            local("Depends on #3 (it replaces the hack in #1)", None),
            [Some(3)]
        );
        assert_eq!(
            local("Depends on #3, #4; #5.", None),
            [Some(3), Some(4), Some(5)]
        );
        assert_eq!(local("Blocked by the release of #2", None), []);
        assert_eq!(local("Depends on:#7", None), [Some(7)]);
        assert_eq!(local("Dependson #7\nDepends onward #8", None), []);
    }

    #[test]
    fn another_repository_s_issue_is_no_local_dependency() {
        let this = Repository::of_url("https://github.com/octo/app/issues/1").expect("url");
        let body = "Blocked by octo/other-repo#3, Octo/App#4, https://github.com/octo/app/issues/5#issuecomment-1 and https://github.com/octo/lib/pull/6\nDepends on https://ghe.example/octo/app/issues/7";
        assert_eq!(
            local(body, Some(&this)),
            [None, Some(4), Some(5), None, None]
        );
        // Without the list's addresses, only `#N` can be placed.
        assert_eq!(local(body, None), [None, None, None, None, None]);
        assert_eq!(
            dependencies("Blocked by octo/other-repo#3")[0].to_string(),
            "octo/other-repo#3"
        );
    }

    #[test]
    fn what_is_not_a_reference_ends_the_list() {
        for word in [
            "#",
            "#x",
            "a#3",
            "/b#3",
            "https://github.com/o/r/wiki/3",
            "#3x",
        ] {
            assert_eq!(reference(word), None, "{word}");
        }
    }
}
