//! What runs around a run while its user is elsewhere, through the real
//! binary: lifecycle hooks (`hooks`), notifications and the webhook
//! (`notify`), fallback agents for a usage limit (`fallback`), and the idle
//! timeout for an agent gone silent (`idle`).

mod fallback;
mod hooks;
mod idle;
mod notify;
