//! What every request goes through before a page is made, and the shapes
//! of every answer: the host it is addressed to, the token (in the URL
//! once, then a cookie, or as a bearer token for programs), the origin of
//! an action, and responses that a browser neither caches nor frames.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Response, StatusCode};

use super::token::Token;

pub type Body = BoxBody<Bytes, Infallible>;

/// Which `Host` headers the server answers: with a loopback address, only
/// its own address and the loopback names of its port, so that a page of another site whose
/// name resolves to 127.0.0.1 cannot read it (DNS rebinding); bound to
/// another address, any, as the user reaches it by a name of their own.
#[derive(Debug, Clone)]
pub enum Hosts {
    /// Bound to this loopback address.
    Loopback(std::net::SocketAddr),
    Any,
}

impl Hosts {
    pub fn allows(&self, headers: &HeaderMap) -> bool {
        let Hosts::Loopback(addr) = self else {
            return true;
        };
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return false;
        };
        let port = addr.port();
        host.eq_ignore_ascii_case(&addr.to_string())
            || ["127.0.0.1", "localhost", "[::1]"]
                .iter()
                .any(|name| host.eq_ignore_ascii_case(&format!("{name}:{port}")))
    }
}

/// How a request stands with the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// By the cookie a browser keeps: an action needs its origin checked.
    Cookie,
    /// By `Authorization: Bearer`, which no other site can make a browser send.
    Bearer,
    /// By `?token=` in the URL: the browser is sent on without it, and
    /// given the cookie. The location keeps the rest of the query.
    FromUrl {
        location: String,
    },
    Denied,
}

/// The cookie that holds the token: one per port, so that servers of two
/// repositories on one machine do not overwrite each other's.
pub fn cookie_name(port: u16) -> String {
    format!("ralph-token-{port}")
}

pub fn access(parts: &hyper::http::request::Parts, token: &Token, cookie: &str) -> Access {
    let headers = &parts.headers;
    if let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
    {
        return if token.matches(given.trim()) {
            Access::Bearer
        } else {
            Access::Denied
        };
    }
    if let Some(query) = parts.uri.query() {
        let mut rest = Vec::new();
        let mut given = None;
        for pair in query.split('&') {
            match pair.strip_prefix("token=") {
                Some(value) => given = Some(value),
                None if !pair.is_empty() => rest.push(pair),
                None => {}
            }
        }
        if let Some(given) = given {
            if !token.matches(given) {
                return Access::Denied;
            }
            let mut location = parts.uri.path().to_owned();
            if !rest.is_empty() {
                location.push('?');
                location.push_str(&rest.join("&"));
            }
            return Access::FromUrl { location };
        }
    }
    let from_cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .any(|(name, value)| name == cookie && token.matches(value));
    if from_cookie {
        Access::Cookie
    } else {
        Access::Denied
    }
}

/// Where an action says it was sent from, by the headers a browser adds
/// to every request and no page can set: `Origin` and `Sec-Fetch-Site`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// A page of this server: `Sec-Fetch-Site: same-origin`, or an
    /// `Origin` that is this server's.
    OwnPage,
    /// A page of another site: `Sec-Fetch-Site` other than
    /// `same-origin`, or an `Origin` other than this server's.
    OtherSite,
    /// Nothing said (a program), or only `Origin: null`, which a browser
    /// sends from pages of any site.
    Unsaid,
}

pub fn sender(headers: &HeaderMap) -> Sender {
    let text = |name| {
        headers
            .get(name)
            .and_then(|h: &HeaderValue| h.to_str().ok())
    };
    let host = text(header::HOST);
    let own = |origin: &str| {
        host.is_some_and(|host| {
            ["http", "https"]
                .iter()
                .any(|scheme| origin.eq_ignore_ascii_case(&format!("{scheme}://{host}")))
        })
    };
    let origin = text(header::ORIGIN).filter(|origin| *origin != "null");
    let fetch_site = text(SEC_FETCH_SITE);
    if fetch_site.is_some_and(|site| !site.eq_ignore_ascii_case("same-origin"))
        || origin.is_some_and(|origin| !own(origin))
    {
        Sender::OtherSite
    } else if fetch_site.is_some() || origin.is_some() {
        Sender::OwnPage
    } else {
        Sender::Unsaid
    }
}

const SEC_FETCH_SITE: header::HeaderName = header::HeaderName::from_static("sec-fetch-site");

/// Headers on every answer: never cached (pages hold the run as it was),
/// never framed by another page, no guessing of types, no referrer sent
/// to another site (a page's own forms name it, see [`sender`]).
fn guarded(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

fn answer(status: StatusCode, content_type: &'static str, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    guarded(response)
}

pub fn html(status: StatusCode, page: String) -> Response<Body> {
    answer(status, "text/html; charset=utf-8", full(page))
}

pub fn plain(body: Body) -> Response<Body> {
    answer(StatusCode::OK, "text/plain; charset=utf-8", body)
}

pub fn asset(content_type: &'static str, text: &'static str) -> Response<Body> {
    answer(StatusCode::OK, content_type, full(text))
}

/// A stream of server-sent events.
pub fn events(body: Body) -> Response<Body> {
    let mut response = answer(StatusCode::OK, "text/event-stream", body);
    // Proxies that buffer would hold the events back.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// `response`, and the connection closed after it: what is left of the
/// request is not read.
pub fn closing(mut response: Response<Body>) -> Response<Body> {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// 303 to `location`, the page to see after an action or a first visit.
pub fn see_other(location: &str, cookie: Option<String>) -> Response<Body> {
    let mut response = answer(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", full(""));
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    if let Some(value) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The cookie a browser keeps the token in: for this server's paths, out
/// of scripts' reach, never sent along from another site.
pub fn token_cookie(name: &str, token: &Token) -> String {
    format!(
        "{name}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age=31536000",
        token.as_str()
    )
}

/// A refused request: its status and a page that says why.
pub fn refused(status: StatusCode, message: &str, hint: Option<&str>) -> Response<Body> {
    let title = status.canonical_reason().unwrap_or("Refused");
    let mut response = html(
        status,
        crate::ui::web::refusal(status.as_u16(), title, message, hint),
    );
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"git ralph serve\""),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(uri: &str, headers: &[(&str, &str)]) -> hyper::http::request::Parts {
        let mut builder = hyper::Request::builder().uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[test]
    fn the_token_opens_by_url_once_then_by_cookie_or_bearer() {
        let token = Token::random().unwrap();
        let t = token.as_str();
        let cookie = cookie_name(7574);
        assert_eq!(
            access(
                &parts(&format!("/runs/greet?a=1&token={t}"), &[]),
                &token,
                &cookie
            ),
            Access::FromUrl {
                location: "/runs/greet?a=1".into()
            }
        );
        assert_eq!(
            access(&parts("/?token=nope", &[]), &token, &cookie),
            Access::Denied
        );
        let jar = format!("other=1; {cookie}={t}");
        assert_eq!(
            access(&parts("/", &[("cookie", &jar)]), &token, &cookie),
            Access::Cookie
        );
        let foreign = format!("ralph-token-1={t}");
        assert_eq!(
            access(&parts("/", &[("cookie", &foreign)]), &token, &cookie),
            Access::Denied,
            "another port's cookie"
        );
        let bearer = format!("Bearer {t}");
        assert_eq!(
            access(&parts("/", &[("authorization", &bearer)]), &token, &cookie),
            Access::Bearer
        );
        assert_eq!(access(&parts("/", &[]), &token, &cookie), Access::Denied);
    }

    #[test]
    fn a_loopback_server_answers_its_own_names_only() {
        let hosts = Hosts::Loopback("127.0.0.1:7574".parse().unwrap());
        let with = |host: &str| parts("/", &[("host", host)]).headers;
        assert!(hosts.allows(&with("127.0.0.1:7574")));
        assert!(hosts.allows(&with("localhost:7574")));
        let other = Hosts::Loopback("127.0.0.2:7574".parse().unwrap());
        assert!(other.allows(&with("127.0.0.2:7574")));
        assert!(!hosts.allows(&with("evil.example:7574")));
        assert!(!hosts.allows(&with("127.0.0.1:80")));
        assert!(!hosts.allows(&HeaderMap::new()));
        assert!(Hosts::Any.allows(&with("box.lan:7574")));
    }

    #[test]
    fn an_action_says_which_page_sent_it() {
        let with = |headers: &[(&str, &str)]| {
            let mut all = vec![("host", "127.0.0.1:7574")];
            all.extend_from_slice(headers);
            sender(&parts("/", &all).headers)
        };
        assert_eq!(
            with(&[("origin", "http://127.0.0.1:7574")]),
            Sender::OwnPage
        );
        assert_eq!(with(&[("sec-fetch-site", "same-origin")]), Sender::OwnPage);
        assert_eq!(
            with(&[("origin", "null"), ("sec-fetch-site", "same-origin")]),
            Sender::OwnPage
        );
        assert_eq!(
            with(&[("origin", "http://evil.example")]),
            Sender::OtherSite
        );
        assert_eq!(
            with(&[("origin", "null"), ("sec-fetch-site", "cross-site")]),
            Sender::OtherSite
        );
        assert_eq!(
            with(&[
                ("origin", "http://evil.example"),
                ("sec-fetch-site", "same-origin")
            ]),
            Sender::OtherSite
        );
        assert_eq!(with(&[("sec-fetch-site", "same-site")]), Sender::OtherSite);
        assert_eq!(with(&[("origin", "null")]), Sender::Unsaid);
        assert_eq!(with(&[]), Sender::Unsaid);
    }
}
