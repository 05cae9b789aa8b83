// Test sentences for the use-lite tokenizer and embedder goldens, written
// for medtrust (no corpus text). Exports an array of {text, repeat?}; a
// repeated entry is text.repeat(repeat), used for very long inputs.
'use strict';

const medical = [
  'The patient presented with acute chest pain radiating to the left arm.',
  'Metformin is first-line therapy for type 2 diabetes mellitus.',
  'Hypertension increases the risk of stroke and myocardial infarction.',
  'She was diagnosed with community-acquired pneumonia and started on ceftriaxone.',
  'An MRI of the lumbar spine showed a herniated disc at L4-L5.',
  'Warfarin interacts with many antibiotics, raising the INR.',
  'Chronic kidney disease is staged by the estimated glomerular filtration rate.',
  'The child had a fever, a rash, and swollen lymph nodes.',
  'Atrial fibrillation may cause palpitations, fatigue and dizziness.',
  'Pheochromocytoma is a rare catecholamine-secreting tumour of the adrenal medulla.',
  'What are the symptoms of Guillain-Barré syndrome?',
  'How is Hashimoto thyroiditis treated?',
  'Is ibuprofen safe during pregnancy?',
  'Amyotrophic lateral sclerosis progressively destroys motor neurons.',
  'Glucocorticoids suppress inflammation but may cause hyperglycaemia.',
  'The biopsy revealed adenocarcinoma with perineural invasion.',
  'Cystic fibrosis is caused by mutations in the CFTR gene.',
  'Sickle cell anemia results from a single amino acid substitution in hemoglobin.',
  'A lumbar puncture was performed to rule out bacterial meningitis.',
  'Anticoagulation was held because of gastrointestinal bleeding.',
  'The ECG showed ST-segment elevation in leads II, III and aVF.',
  'Thrombocytopenia was noted on the complete blood count.',
  'He reports polyuria, polydipsia and unexplained weight loss.',
  'Tuberculosis is treated with isoniazid, rifampicin, pyrazinamide and ethambutol.',
  'Penicillin allergy was documented in the chart.',
  'Acetaminophen overdose can cause fulminant hepatic failure.',
  'Her echocardiogram showed an ejection fraction of thirty-five percent.',
  'Diverticulitis typically presents with left lower quadrant pain.',
  'The nurse administered subcutaneous enoxaparin for DVT prophylaxis.',
  'Psoriasis is a chronic immune-mediated skin disease.',
  'Alzheimer disease is the most common cause of dementia.',
  'Migraine with aura may be preceded by visual disturbances.',
  'Hypokalemia can lead to cardiac arrhythmias.',
  'Lupus nephritis requires immunosuppressive therapy.',
  'Osteoporosis increases fracture risk in postmenopausal women.',
  'The surgeon performed a laparoscopic cholecystectomy.',
  'Escherichia coli is a frequent cause of urinary tract infections.',
  'Methicillin-resistant Staphylococcus aureus was isolated from the wound.',
  'Vaccination against measles, mumps and rubella is recommended in childhood.',
  'Dyspnea on exertion and orthopnea suggest heart failure.',
  'Carbamazepine can induce Stevens-Johnson syndrome in HLA-B*15:02 carriers.',
  'Ulcerative colitis involves the rectum and extends proximally.',
  'Crohn disease can affect any part of the gastrointestinal tract.',
  'The patient denies tobacco, alcohol or illicit drug use.',
  'Bradycardia was managed with atropine.',
  'Levothyroxine should be taken on an empty stomach.',
  'Cholangiocarcinoma often presents with painless jaundice.',
  'A positive Babinski sign indicates an upper motor neuron lesion.',
  'Hemochromatosis leads to iron deposition in the liver and pancreas.',
  'Obstructive sleep apnea is associated with obesity and snoring.',
  'Preeclampsia is defined by new-onset hypertension after 20 weeks of gestation.',
  'The radiologist suspected a pulmonary embolism on CT angiography.',
  'Bronchiolitis in infants is most often caused by RSV.',
  'Kawasaki disease can lead to coronary artery aneurysms.',
  'Rheumatoid arthritis causes symmetric polyarthritis of small joints.',
  'Anaphylaxis should be treated immediately with intramuscular epinephrine.',
  'Parkinson disease is characterized by tremor, rigidity and bradykinesia.',
  'Sertraline is a selective serotonin reuptake inhibitor.',
  'Pancreatitis is frequently caused by gallstones or alcohol.',
  'Endometriosis may cause infertility and pelvic pain.',
  'The wound was debrided and packed with saline-moistened gauze.',
  'Hyponatremia must be corrected slowly to avoid osmotic demyelination.',
  'Helicobacter pylori infection is linked to peptic ulcer disease.',
  'Glaucoma damages the optic nerve, often without early symptoms.',
  'Macular degeneration leads to loss of central vision.',
  'Otitis media is common in young children.',
  'Celiac disease is an immune reaction to gluten.',
  'Myasthenia gravis presents with fluctuating muscle weakness.',
  'Addison disease results from adrenal insufficiency.',
  'Cushing syndrome is caused by prolonged exposure to cortisol.',
  'Hepatitis B can be prevented by vaccination.',
  'HIV attacks CD4-positive T lymphocytes.',
  'Schizophrenia is treated with antipsychotic medication.',
  'Bipolar disorder involves episodes of mania and depression.',
  'Appendicitis classically begins with periumbilical pain.',
  'Sarcoidosis forms non-caseating granulomas in the lungs.',
  'Retinopathy of prematurity affects infants born very early.',
  'Spironolactone is a potassium-sparing diuretic.',
  'Digoxin toxicity may cause yellow-tinted vision.',
  'The differential diagnosis includes lymphoma, leukemia and sarcoidosis.',
];

const numbers = [
  'Take 500 mg of amoxicillin every 8 hours for 7 days.',
  'Blood pressure was 142/91 mmHg and heart rate 104 bpm.',
  'HbA1c fell from 9.1% to 6.8% after 3 months.',
  'Temperature 38.5 °C, SpO2 93% on room air.',
  'Give 0.1 mg/kg IV, maximum 4 mg per dose.',
  'Serum creatinine 1.8 mg/dL (159 µmol/L).',
  'Platelets 45 × 10^9/L, WBC 12.3 × 10⁹/L.',
  'Infuse norepinephrine at 0.05 µg/kg/min.',
  'The tumour measured 3.2 x 2.1 x 1.7 cm.',
  'Vitamin D 25-OH was 12 ng/mL.',
  'Administer 1,000 mL of normal saline over 2 h.',
  'BMI 31.4 kg/m², waist 104 cm.',
  'The dose is ½ tablet twice daily.',
  'Potassium 2.9 mmol/L; magnesium 0.6 mmol/L.',
  'LDL cholesterol 190 mg/dL; target < 70 mg/dL.',
  'INR 3.4 on warfarin 5 mg daily.',
  'Troponin I rose to 2.35 ng/mL at 6 h.',
  'Born at 28+3 weeks, weighing 1,150 g.',
  'eGFR 38 mL/min/1.73 m².',
  'Heparin 5000 units SC q12h.',
  'Hemoglobin 7.9 g/dL, MCV 68 fL.',
  'Insulin glargine 24 IU at bedtime.',
  'The patient is a 67-year-old man with a 40 pack-year smoking history.',
  'Pain score 8/10 at rest, 10/10 with movement.',
  'QTc interval 512 ms.',
  'Oxygen at 2 L/min via nasal cannula.',
  'CRP 148 mg/L and procalcitonin 4.2 ng/mL.',
  'Ferritin 1,250 µg/L with transferrin saturation 78%.',
  'The 5-year survival rate is about 17%.',
  'Apgar scores were 7 and 9 at 1 and 5 minutes.',
  'TSH 0.01 mIU/L, free T4 3.2 ng/dL.',
  'Lithium level 1.6 mEq/L, above the therapeutic range.',
  'A 2-cm laceration was closed with 4-0 nylon sutures.',
  'CD4 count 180 cells/mm³, viral load 45,000 copies/mL.',
  'Dose 10⁻³ mol/L, pH 7.21, pCO2 58 mmHg.',
  'Follow up on 12/03/2024 at 09:30.',
  'Call 555-0142 or extension #23.',
  'Version 2.0.1 released on 2023-11-05.',
  'Between 1990 and 2020 the incidence doubled.',
  '3.14159 2.71828 1.41421 0.57721',
  '1st, 2nd, 3rd and 4th generation cephalosporins',
  '100% 50% 0.5% 12.5%',
  '$1,200 per month or €950',
  '−5 °C to +40 °C',
  '1e-6 and 3.0E+8',
  '0.001 0.01 0.1 1 10 100 1000 10000 100000',
  '42',
  '7',
  '2024',
  '12:00 AM - 11:59 PM',
];

const punctuation = [
  'Wait... what?!',
  '"Quoted text," she said, "is tricky."',
  '(parentheses) [brackets] {braces} <angles>',
  'semi;colon:colon,comma.period',
  'hyphen-ated and en–dash and em—dash',
  'A/B testing; and/or; either/or',
  'email: someone@example.org, url: https://example.org/path?q=1&r=2',
  'Smile :) frown :( wink ;-) laugh :-)',
  '*** WARNING *** do not exceed the stated dose!!!',
  '#hashtag @mention $variable %percent ^caret &amp',
  '¿Dónde está el hospital? ¡Ayuda!',
  '“Curly quotes” and ‘single ones’ and «guillemets»',
  '...',
  '?!?!',
  '---',
  '~tilde~ `backtick` |pipe| \\backslash\\',
  'C:\\Users\\patient\\records.txt',
  'key=value; other_key = "x"',
  'It\'s the patient\'s choice; they\'re informed.',
  'e.g., i.e., etc., vs., Dr., Mr., Mrs.',
  '• bullet one • bullet two',
  '1) first 2) second 3) third',
  'a.b.c.d.e',
  '!!! ??? ...',
  '¡¡¡',
  '→ ← ↑ ↓ ⇒',
  '© 2024 ® ™',
  '§ 12 ¶ 3',
  'x² + y² = z²',
  'α-blocker, β-agonist, γ-globulin',
];

const nonAscii = [
  'Le patient présente une fièvre et une toux depuis trois jours.',
  'El paciente tiene dolor abdominal y náuseas.',
  'Der Patient klagt über Kopfschmerzen und Übelkeit.',
  'Il paziente è stato dimesso dopo una settimana.',
  'O paciente apresentou melhora após o tratamento.',
  'Пациент жалуется на боль в груди.',
  'Ο ασθενής έχει πυρετό.',
  'المريض يعاني من ارتفاع ضغط الدم',
  'रोगी को बुखार है।',
  '患者は発熱と咳を訴えている。',
  '病人有高血压和糖尿病。',
  '환자는 두통을 호소했다.',
  'ผู้ป่วยมีไข้สูง',
  'Hasta ateşli ve öksürüyor.',
  'Pacjent skarży się na ból głowy.',
  'Patienten har feber och hosta.',
  'Bệnh nhân bị sốt cao.',
  'naïve café résumé façade coöperate',
  'Ærøskøbing, Øresund, Åland',
  'straße Maße Fuß',
  'ﬁnal ﬂuid ﬀ',
  'ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ １２３',
  'Chapter Ⅳ, section ⅻ',
  'Room temperature 25℃ or 77℉',
  'e\u0301 vs é and n\u0303 vs ñ',
  'Hello 👋 world 🌍',
  '💊💉🩺',
  '🙂',
  'Emoji in the middle 🤒 of a sentence.',
  'math 𝐛𝐨𝐥𝐝 and 𝒾𝓉𝒶𝓁𝒾𝒸',
  'ｶﾀｶﾅ half-width katakana',
  'Zero\u200bwidth\u200bspace',
  'soft\u00adhyphen',
  'non\u00a0breaking\u00a0space',
  'tab\tseparated\tvalues',
  'line one\nline two',
  'carriage\r\nreturn',
  '\u3000ideographic space',
  'µ micro vs μ mu',
  'Å angstrom vs Å',
  '℡ ㎎ ㎖ ㎏',
  '① ② ③',
  '¼ ¾ ⅓',
  'Ǆ ǅ ǆ',
  'İstanbul ıi',
  'ÀÉÎÕÜ àéîõü',
  '\u00bfQu\u00e9?',
  'ヘモグロビン A1c',
  'Mañana, señor Muñoz.',
  'Crème brûlée à la française',
];

const edge = [
  '', ' ', '  ', 'a', 'A', '.', ',', '?', '▁', '▁▁', '_', '-', '0',
  'é', '中', '🙂', '\u0000', '\t', '\n', '   leading spaces',
  'trailing spaces   ', 'double  spaces  inside', 'UPPERCASE SENTENCE HERE',
  'MiXeD cAsE tExT', 'nospacesatallinthisverylongwordthatgoesonandon',
  'supercalifragilisticexpialidocious', 'antidisestablishmentarianism',
  'pneumonoultramicroscopicsilicovolcanoconiosis', 'a b c d e f g h i j',
  'I', 'I am.', 'ok', 'OK', 'Ok.', 'the', 'The', 'THE', ' the', 'the ',
];

const generated = [];
const drugs = ['aspirin', 'metoprolol', 'lisinopril', 'atorvastatin',
  'omeprazole', 'gabapentin', 'prednisone', 'furosemide', 'insulin',
  'vancomycin'];
const units = ['mg', 'mcg', 'g', 'mL', 'units', 'mg/kg', 'µg', 'mmol'];
const freq = ['once daily', 'twice a day', 'every 6 hours', 'at night',
  'as needed', 'q8h', 'PRN', 'BID'];
for (let i = 0; i < 100; i++) {
  const d = drugs[i % drugs.length];
  const u = units[(i * 3) % units.length];
  const f = freq[(i * 5) % freq.length];
  const dose = ((i * 37) % 1000) / (i % 3 === 0 ? 10 : 1);
  generated.push(`Patient ${i + 1}: ${d} ${dose} ${u} ${f}.`);
}
const organs = ['liver', 'kidney', 'heart', 'lung', 'brain', 'skin',
  'pancreas', 'thyroid', 'spleen', 'colon'];
const verbs = ['biopsy of the', 'ultrasound of the', 'disease of the',
  'transplant of the', 'cancer of the', 'inflammation of the'];
for (let i = 0; i < 80; i++) {
  const o = organs[i % organs.length];
  const v = verbs[(i * 7) % verbs.length];
  generated.push(i % 4 === 0 ? `What causes ${v} ${o}?`
    : `The ${v} ${o} was reviewed on day ${i % 30 + 1}.`);
}

const labs = ['sodium', 'potassium', 'glucose', 'lactate', 'bilirubin',
  'albumin', 'troponin', 'ALT', 'AST', 'TSH', 'PSA', 'D-dimer', 'BNP'];
const labUnits = ['mmol/L', 'mg/dL', 'ng/mL', 'U/L', 'g/L', 'pg/mL',
  'µIU/mL', '%'];
for (let i = 0; i < 70; i++) {
  const l = labs[i % labs.length];
  const u = labUnits[(i * 5) % labUnits.length];
  const v = (((i * 7919) % 10007) / 100).toFixed(i % 3);
  const arrow = ['↑', '↓', '(H)', '(L)', ''][i % 5];
  generated.push(`${l}: ${v} ${u} ${arrow} [ref ${i % 9}-${i % 9 + 10}]`);
}

const long = [
  {text: 'The patient was admitted for evaluation of recurrent syncope. ',
   repeat: 12},
  {text: 'Bilateral lower extremity edema with pitting to the knees, ',
   repeat: 40},
  {text: 'word ', repeat: 300},
  {text: 'x', repeat: 2000},
  {text: '1234567890', repeat: 300},
  {text: 'Ünïcödé ', repeat: 200},
];

function build() {
  const out = [];
  // The first 200 entries are the embedding set: a mix of every kind,
  // including empty, one-character and over-long (> 128 tokens) inputs.
  const head = [].concat(medical.slice(0, 60), numbers.slice(0, 30),
    punctuation.slice(0, 15), nonAscii.slice(0, 25), edge.slice(0, 20),
    generated.slice(0, 46)).map((t) => ({text: t}));
  head.push(long[0], long[1], long[2], long[5]);
  const tail = [].concat(medical.slice(60), numbers.slice(30),
    punctuation.slice(15), nonAscii.slice(25), edge.slice(20),
    generated.slice(46)).map((t) => ({text: t}));
  tail.push(long[3], long[4]);
  return out.concat(head, tail);
}

module.exports = build();
