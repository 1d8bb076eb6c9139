//! A change to the run's record, as the commands of [`RunState`] return
//! it: the events it caused, to be told only once the record that holds
//! them is saved. The run takes a change whole (`Run::commit`): it saves
//! the state once, then publishes every event. A change left unused is a
//! record that says more than anyone was told, hence `#[must_use]`; one
//! that tells nothing may be dropped with [`Change::quiet`]'s value.
//!
//! [`RunState`]: super::RunState

use crate::events::Event;

/// What one command did to the record, and the events that tell of it.
#[must_use = "a change to the record is saved and published by the run, or told nothing"]
#[derive(Debug, Default, PartialEq)]
pub struct Change {
    events: Vec<Event>,
}

impl Change {
    /// A change no event tells of.
    pub fn quiet() -> Change {
        Change::default()
    }

    /// A change told by `event`.
    pub fn telling(event: Event) -> Change {
        Change {
            events: vec![event],
        }
    }

    /// This change, told also by `event`, after its own events.
    pub fn and(mut self, event: Event) -> Change {
        self.events.push(event);
        self
    }

    /// This change and `other` as one, told in that order.
    pub fn then(mut self, other: Change) -> Change {
        self.events.extend(other.events);
        self
    }

    /// The events, in the order they are told.
    pub fn into_events(self) -> Vec<Event> {
        self.events
    }
}
