import Foundation

// Editing a masked text field as the customer types.
//
// The behaviour is the vendor's Android SDK's
// (`connect-sdk-client-android` 7.0.4, `formatter/StringFormatter.java`
// `applyMask(mask, value, oldValue, start, count, after)`, commit 0fa17c09): its arguments are those of
// Android's `TextWatcher.beforeTextChanged`, and its unit tests (`masking/MaskTest.java`) are the only
// vendor vectors that assert where the cursor goes. The Swift SDK has no edit model (it only moves a
// cursor for inserted literals, see `WorldlineMask.format(_:cursor:)`) and the JavaScript SDK's cursor is
// not asserted by any test. Two deliberate differences from the Android code: a placeholder accepts what
// the Swift SDK's formatter accepts (so `-` inside `{{ }}` is never a match, where Android would compile it
// as a regular expression), and the returned cursor is clamped into the new value.

extension WorldlineMask {
    /// Re-masks a text field after an edit and says where the cursor goes.
    ///
    /// In `previous` (the field's text before the edit), `count` characters starting at `start` were
    /// replaced by `after` new characters, which gave `newValue` (the raw text after the edit, masked
    /// or not). Insertion is `count == 0`, deletion `after == 0`, anything else a replacement. Indices and
    /// counts are in characters; negative ones count as 0.
    ///
    /// The Android SDK's vectors, for `{{9999}} {{9999}} {{9999}} {{9999}} {{999}}`: typing `"1234"` into an
    /// empty field gives `"1234 "` with the cursor at 5; typing `"0"` at the front of `"1234 "` gives
    /// `"0123 4"` with the cursor at 1; deleting the space of `"1234 "` gives `"1234 "` with the cursor at 4.
    public func apply(edit newValue: String, previous: String, start: Int, count: Int, after: Int)
        -> (value: String, cursor: Int)
    {
        let value = Array(newValue)
        let old = Array(previous)
        let start = max(start, 0)
        let removed = max(count, 0)
        let added = max(after, 0)
        let result: (value: [Character], cursor: Int)
        if added > 0 && removed == 0 {
            result = insertion(value, previous: old, added: added, start: start)
        } else if added == 0 && removed > 0 {
            result = (deletion(value), start)
        } else {
            result = insertion(deletion(value), previous: old, added: added, start: start)
        }
        return (String(result.value), min(max(result.cursor, 0), result.value.count))
    }

    /// Re-masks a text field after the characters of `previous` in `range` were replaced by `replacement`
    /// (what a text field's "should change characters in range" callback reports), and says where the
    /// cursor goes. `range` is in characters and is clamped into `previous`.
    public func apply(replacing range: Range<Int>, with replacement: String, in previous: String)
        -> (value: String, cursor: Int)
    {
        let old = Array(previous)
        let lower = min(max(range.lowerBound, 0), old.count)
        let upper = min(max(range.upperBound, lower), old.count)
        let newValue = String(old[..<lower]) + replacement + String(old[upper...])
        return apply(edit: newValue, previous: previous, start: lower, count: upper - lower, after: replacement.count)
    }

    /// The value after a deletion: placeholders keep what they accept, literals are inserted where the
    /// value lacks them, and the literal that follows the last group the value reaches is appended.
    private func deletion(_ value: [Character]) -> [Character] {
        let slots = self.slots
        var output: [Character] = []
        var valueIndex = 0
        var slotIndex = 0
        while slotIndex < slots.count {
            switch slots[slotIndex] {
            case .placeholder(let placeholder):
                if valueIndex >= value.count { return output }
                if Self.placeholder(placeholder, accepts: value[valueIndex]) {
                    output.append(value[valueIndex])
                    slotIndex += 1
                }
                valueIndex += 1
            case .literal(let literal):
                output.append(literal)
                if valueIndex >= value.count { return output }
                if value[valueIndex] == literal { valueIndex += 1 }
                slotIndex += 1
            }
        }
        return output
    }

    /// The value after `added` characters were inserted at `start`: the cursor starts at `start` and moves
    /// along with the inserted characters the mask keeps and with the literals it passes meanwhile.
    private func insertion(_ value: [Character], previous old: [Character], added: Int, start: Int)
        -> (value: [Character], cursor: Int)
    {
        let slots = self.slots
        var output: [Character] = []
        var valueIndex = 0
        var oldIndex = 0
        var slotIndex = 0
        var cursor = start
        var keptNew = 0
        var moving = false
        while slotIndex < slots.count {
            switch slots[slotIndex] {
            case .placeholder(let placeholder):
                if valueIndex >= value.count { return (output, cursor) }
                if valueIndex == start { moving = true }
                if keptNew == added { moving = false }
                if Self.placeholder(placeholder, accepts: value[valueIndex]) {
                    output.append(value[valueIndex])
                    slotIndex += 1
                    if moving {
                        cursor += 1
                        keptNew += 1
                    }
                }
                // While the cursor stands still, the value and the previous text advance together.
                if !moving { oldIndex += 1 }
                valueIndex += 1
            case .literal(let literal):
                output.append(literal)
                if valueIndex >= value.count {
                    if moving { cursor += 1 }
                    return (output, cursor)
                }
                if valueIndex == start { moving = true }
                if moving { cursor += 1 }
                if keptNew == added { moving = false }
                // A literal already in place in both texts is taken over rather than inserted again.
                if valueIndex == oldIndex && value[valueIndex] == literal
                    && oldIndex < old.count && old[oldIndex] == literal
                {
                    valueIndex += 1
                    oldIndex += 1
                }
                slotIndex += 1
            }
        }
        return (output, cursor)
    }
}
